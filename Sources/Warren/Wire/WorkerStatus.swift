import Foundation

/// What a live worker reports when asked (`warren status`): who it is, what it holds, what it has done.
/// Version 1 of the format.
public struct WorkerStatus: Sendable, Hashable, Codable {
    /// One local operation queue.
    public struct LocalQueueStatus: Sendable, Hashable, Codable {
        public var name: String
        public var width: Int
        /// Operations running now.
        public var executing: Int
        /// Operations held, not yet started.
        public var waiting: Int
    }

    public var version: Int
    public var workerID: String
    public var host: String
    public var pid: Int32
    public var startedAt: Date
    public var uptimeSeconds: Double
    /// The broker queues it consumes.
    public var queues: [String]
    /// The broker queues it is paused on.
    public var pausedQueues: [String]
    public var prefetch: Int
    public var localQueues: [LocalQueueStatus]
    /// Jobs it ended, by status (`succeeded`, `failed`, `cancelled`).
    public var totals: [String: Int]

    enum CodingKeys: String, CodingKey {
        case version, workerID = "workerId", host, pid, startedAt, uptimeSeconds, queues, pausedQueues, prefetch,
            localQueues, totals
    }

    /// Decodes a status message body.
    public static func decode(_ body: [UInt8]) throws -> WorkerStatus {
        try WireCoding.decoder.decode(WorkerStatus.self, from: Data(body))
    }
}
