import Foundation

/// A job on the wire: which operation to run, on what input, and how urgently. Version 1 of the format.
///
/// Immutable once published, like the input an `Operation` is initialised with. See `docs/wire-format.md`.
public struct OperationDescriptor: Sendable, Hashable, Codable {
    /// The wire format version; this build reads and writes 1.
    public var version: Int
    /// Unique job id; results and cancellations refer to it.
    public var id: String
    /// The operation type name a worker's registry maps to code.
    public var type: String
    /// The operation's input, any JSON value.
    public var input: JSONValue
    /// Default: ``JobPriority/normal``.
    public var priority: JobPriority
    /// Orders jobs of the same ``key``: a result with a lower sequence than one already seen is stale.
    public var sequence: UInt64
    /// Groups jobs that compute the same thing (ListAdder's list); the newest sequence wins.
    public var key: String?
    /// Past this instant the job is not started (it ends `cancelled`, reason `deadline`).
    public var deadline: Date?
    /// The job does not start before this instant: a worker that receives it earlier sends it back through the
    /// delay queues until it is due (`Sidekiq`'s `perform_at`, Celery's `eta`).
    public var notBefore: Date?
    /// When the producer created the job.
    public var createdAt: Date?
    /// How many times a job whose handler fails with a retryable error runs, in all. Default: 3.
    /// Between attempts it waits 1 s, 2 s, 4 s … (at most 5 minutes), each ±25 %.
    public var maxAttempts: Int?
    /// The longest the job's code may run, in seconds, counted from when it starts (Celery's `time_limit`); past it
    /// the worker cancels the job and it ends `failed` (`timeLimit`). A worker's own limit for the job's type
    /// (`warren worker --time-limit`) applies too: the shorter one counts. 0.001 … 31,536,000 (a year).
    public var timeLimitSeconds: Double?
    /// The job holds the unique lock of its ``key`` (Sidekiq's unique jobs): its producer took the lock, queue
    /// `warren.unique.KEY`, before publishing it, and the worker that ends it for good (succeeded, failed, cancelled
    /// or dead-lettered; not a retry) releases it. Requires a ``key`` of 1 to ``maxUniqueKeyLength`` bytes.
    public var unique: Bool?

    /// Jobs (by id) that must have ended before this one starts; a cancelled or failed one counts as ended,
    /// as with `NSOperation`, unless ``requireSuccess`` is set.
    public var dependencies: [String]?
    /// With ``dependencies``: end `cancelled` (reason `dependency`) instead of running when one of them did not
    /// succeed. Default: `false`.
    public var requireSuccess: Bool?

    /// ``maxAttempts``, or its default.
    public var attemptLimit: Int { max(maxAttempts ?? 3, 1) }

    public init(
        id: String = UUID().uuidString.lowercased(), type: String, input: JSONValue = .null,
        priority: JobPriority = .normal, sequence: UInt64, key: String? = nil, deadline: Date? = nil,
        notBefore: Date? = nil, createdAt: Date? = Date(), maxAttempts: Int? = nil, timeLimitSeconds: Double? = nil,
        unique: Bool? = nil, dependencies: [String]? = nil, requireSuccess: Bool? = nil
    ) {
        self.version = WireCoding.version
        self.id = id
        self.type = type
        self.input = input
        self.priority = priority
        self.sequence = sequence
        self.key = key
        self.deadline = deadline
        self.notBefore = notBefore
        self.createdAt = createdAt
        self.maxAttempts = maxAttempts
        self.timeLimitSeconds = timeLimitSeconds
        self.unique = unique
        self.dependencies = dependencies
        self.requireSuccess = requireSuccess
    }

    /// The JSON body of the job message, as Warren's producer publishes it: what `JSONEncoder` writes, written
    /// without it where that is sure to give the same bytes.
    /// - Throws: `EncodingError` for a number in ``input`` that is not finite.
    public func encoded() throws -> [UInt8] {
        try JSONWriter.bytes(for: self) ?? Array(WireCoding.encoder.encode(self))
    }

    /// The longest job id, in bytes: ids are routing keys, which AMQP limits to 255 bytes.
    public static let maxIDLength = 128

    /// What is wrong with `id` as a job id, or `nil` when it is fine: 1 to 128 bytes of letters, digits and
    /// `-_.:`, so that it is a valid routing key and never a wildcard (`*`, `#`) in a result binding.
    public static func problem(withID id: String) -> String? {
        var bytes = id
        guard !id.isEmpty, id.utf8.count <= maxIDLength, bytes.withUTF8({ $0.allSatisfy(isIDByte) }) else {
            return
                "job id must be 1 to \(maxIDLength) letters, digits or -_.: (got \(id.utf8.count) bytes: '\(id.prefix(40))')"
        }
        return nil
    }

    /// The longest operation type name, in bytes: it goes in the job message's AMQP `type` property, which holds at
    /// most 255 bytes.
    public static let maxTypeLength = 255

    /// What is wrong with `type` as a job's operation type, or `nil` when it is fine: 1 to ``maxTypeLength`` bytes.
    public static func problem(withType type: String) -> String? {
        guard !(1...maxTypeLength).contains(type.utf8.count) else { return nil }
        return "an operation type must be 1 to \(maxTypeLength) bytes long (it goes in the message's AMQP type "
            + "property); got \(type.utf8.count) bytes"
    }

    /// The time limits a job may have, in seconds: 1 ms to a year.
    public static let timeLimitRange = 0.001...31_536_000.0

    /// What is wrong with `seconds` as a job's ``timeLimitSeconds``, or `nil` when it is fine.
    public static func problem(withTimeLimit seconds: Double) -> String? {
        guard !timeLimitRange.contains(seconds) else { return nil }
        return "a time limit must be from 1 ms to a year (0.001 to 31536000 seconds); got \(seconds) seconds"
    }

    /// The longest key of a unique job, in bytes: its lock is a queue named `warren.unique.KEY`, and queue names
    /// have at most 255 bytes.
    public static let maxUniqueKeyLength = 255 - UniqueLock.prefix.utf8.count

    /// What is wrong with `key` as the key of a unique job, or `nil` when it is fine.
    public static func problem(withUniqueKey key: String?) -> String? {
        guard let key else { return "a unique job needs a key: its lock is the key's" }
        guard (1...maxUniqueKeyLength).contains(key.utf8.count) else {
            return "a unique job's key must be 1 to \(maxUniqueKeyLength) bytes long (its lock is a queue named "
                + "'\(UniqueLock.prefix)KEY'); got \(key.utf8.count) bytes"
        }
        // The broker drops CR and LF from a queue's name, but not from a routing key: no token would reach it.
        guard key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return nil }
        return "a unique job's key cannot hold control characters (line breaks, tabs, …): it names a queue"
    }

    /// Letters, digits and `-_.:`: checked byte by byte, since every job passes through it.
    private static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case version, id, type, input, priority, sequence, key, deadline, notBefore, createdAt, maxAttempts,
            timeLimitSeconds, unique, dependencies, requireSuccess
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        id = try container.decode(String.self, forKey: .id)
        type = try container.decode(String.self, forKey: .type)
        input = try container.decodeIfPresent(JSONValue.self, forKey: .input) ?? .null
        priority = try container.decodeIfPresent(JobPriority.self, forKey: .priority) ?? .normal
        sequence = try container.decodeIfPresent(UInt64.self, forKey: .sequence) ?? 0
        key = try container.decodeIfPresent(String.self, forKey: .key)
        deadline = try container.decodeIfPresent(Date.self, forKey: .deadline)
        notBefore = try container.decodeIfPresent(Date.self, forKey: .notBefore)
        createdAt = try container.decodeIfPresent(Date.self, forKey: .createdAt)
        maxAttempts = try container.decodeIfPresent(Int.self, forKey: .maxAttempts)
        timeLimitSeconds = try container.decodeIfPresent(Double.self, forKey: .timeLimitSeconds)
        unique = try container.decodeIfPresent(Bool.self, forKey: .unique)
        dependencies = try container.decodeIfPresent([String].self, forKey: .dependencies)
        requireSuccess = try container.decodeIfPresent(Bool.self, forKey: .requireSuccess)
    }
}
