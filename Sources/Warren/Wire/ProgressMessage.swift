import Foundation

/// How far a running job has come, as its operation reported it. Version 1 of the format.
///
/// Published (transient, best effort) to the `warren.progress` topic exchange with the job id as routing key,
/// and to the job's reply queue if it names one; a job's last progress report is not a result: only the result
/// message ends a job.
public struct ProgressMessage: Sendable, Hashable, Codable {
    /// The AMQP `type` property of a progress report.
    public static let messageType = "warren.progress"

    public var version: Int
    /// Always `progress`.
    public var kind: String
    public var jobID: String
    /// 0 … 1.
    public var fraction: Double
    /// The longest ``message`` the initialiser keeps, in Unicode scalars: 1,000.
    public static let maxMessageLength = 1000
    public var message: String?
    public var workerID: String
    public var at: Date

    enum CodingKeys: String, CodingKey {
        case version, kind
        case jobID = "jobId"
        case fraction, message
        case workerID = "workerId"
        case at
    }

    /// A report of `fraction` (outside 0…1, the nearest bound; not a number, 0) and `message`, cut to
    /// ``maxMessageLength`` Unicode scalars.
    public init(jobID: String, fraction: Double, message: String?, workerID: String, at: Date = Date()) {
        self.version = WireCoding.version
        self.kind = "progress"
        self.jobID = jobID
        self.fraction = fraction.isNaN ? 0 : min(max(fraction, 0), 1)
        self.message = message.map { JobError.bounded($0, to: Self.maxMessageLength) }
        self.workerID = workerID
        self.at = at
    }

    /// Decodes a report as any client may have sent it, taking its fraction and message as
    /// ``init(jobID:fraction:message:workerID:at:)`` does, so that readers can count on a fraction from 0 to 1.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            jobID: try container.decode(String.self, forKey: .jobID),
            fraction: try container.decode(Double.self, forKey: .fraction),
            message: try container.decodeIfPresent(String.self, forKey: .message),
            workerID: try container.decode(String.self, forKey: .workerID),
            at: try container.decode(Date.self, forKey: .at))
        version = try container.decode(Int.self, forKey: .version)
        kind = try container.decode(String.self, forKey: .kind)
    }

    /// Decodes a progress message body.
    public static func decode(_ body: [UInt8]) throws -> ProgressMessage {
        try WireCoding.decoder.decode(ProgressMessage.self, from: Data(body))
    }
}
