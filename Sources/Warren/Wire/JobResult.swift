import Foundation

/// How a job ended.
public enum JobStatus: String, Sendable, Codable, CaseIterable {
    case succeeded, failed, cancelled

    /// The AMQP `type` of a result message with this status: `warren.result.succeeded`, `.failed`, `.cancelled`.
    var messageType: String {
        switch self {
        case .succeeded: "warren.result.succeeded"
        case .failed: "warren.result.failed"
        case .cancelled: "warren.result.cancelled"
        }
    }
}

/// Why a job failed: a stable code for programs and a message for people.
///
/// The worker puts both in a dead letter's headers, which must fit in one AMQP frame, so the initialiser cuts them
/// to ``maxCodeLength`` and ``maxMessageLength`` Unicode scalars (ending with `…`): a message quoting a 500 KB
/// operation type name must not make the dead letter unpublishable.
public struct JobError: Sendable, Hashable, Codable, Error, CustomStringConvertible {
    /// Machine-readable cause, e.g. `unknownType`, `invalidInput`, `malformedMessage`, `oversized`, `handlerError`.
    public var code: String
    public var message: String
    /// Whether trying again later could succeed.
    public var retryable: Bool
    /// With ``retryable``: how long to wait before the next attempt, instead of the worker's backoff (1 s, 2 s,
    /// 4 s … at most 5 minutes): an API's `Retry-After`, Celery's `retry(countdown=…)`. From 0 to a year; outside,
    /// the nearest bound. The next attempt never starts sooner. `nil`: the backoff. Not part of a result.
    public var retryAfter: Duration?

    /// The longest ``code`` the initialiser keeps, in Unicode scalars: 200.
    public static let maxCodeLength = 200
    /// The longest ``message`` the initialiser keeps, in Unicode scalars: 1,000.
    public static let maxMessageLength = 1000
    /// The longest ``retryAfter`` a worker waits: a year.
    public static let maxRetryAfter = Duration.seconds(31_536_000)

    /// An empty `code` counts as `handlerError`: a dead letter's reason and a metric's label need one.
    public init(code: String, message: String, retryable: Bool = false, retryAfter: Duration? = nil) {
        self.code = code.isEmpty ? "handlerError" : Self.bounded(code, to: Self.maxCodeLength)
        self.message = Self.bounded(message, to: Self.maxMessageLength)
        self.retryable = retryable
        self.retryAfter = retryAfter.map { min(max($0, .zero), Self.maxRetryAfter) }
    }

    private enum CodingKeys: String, CodingKey {
        case code, message, retryable
    }

    /// `text` cut to at most `limit` Unicode scalars (at most 4 UTF-8 bytes each), the last one `…` if it was cut.
    static func bounded(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit, text.unicodeScalars.count > limit else { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.prefix(limit - 1))
        scalars.append("…")
        return String(scalars)
    }

    public var description: String { "\(code): \(message)" }

    /// An `invalidInput` error for input of `operationType` that does not fit, `detail` saying where and why.
    static func invalidInput(_ detail: String, operationType: String) -> JobError {
        JobError(code: "invalidInput", message: "input does not match operation type '\(operationType)': \(detail)")
    }

    /// An `invalidOutput` error for output of `operationType` that JSON cannot hold, or that a producer cannot
    /// decode, `detail` saying where and why.
    static func invalidOutput(_ detail: String, operationType: String) -> JobError {
        JobError(code: "invalidOutput", message: "output does not match operation type '\(operationType)': \(detail)")
    }
}

/// Why a job was cancelled.
public struct Cancellation: Sendable, Hashable, Codable, Error, CustomStringConvertible {
    /// `requested` (warren cancel), `superseded` (a newer job of the same key), `deadline` or `purged` (warren
    /// purge). A job's code may also see `timeLimit`, when it ran past its time limit, and the reasons that send it
    /// back to the broker.
    public var reason: String
    public var message: String

    public init(reason: String, message: String) {
        self.reason = reason
        self.message = message
    }

    public static let requested = Cancellation(reason: "requested", message: "cancelled by request")

    /// `reason: message`, as `warren results` prints it.
    public var description: String { "\(reason): \(message)" }

    /// The reason of a job cancelled because it ran past its time limit; it ends `failed` (`timeLimit`), not
    /// `cancelled`.
    package static let timeLimitReason = "timeLimit"

    /// Reasons a worker stops a job without ending it: its delivery goes back to the broker, and no result is
    /// published (the worker is stopping, paused on the job's queue, lost the connection the job came on, or learnt
    /// that a worker died while the job executed there, so that it comes back to run alone).
    static let requeueReasons: Set<String> = ["shutdown", "paused", "connectionLost", "crashSuspect"]
}

/// When a job passed each step, as seen by the worker.
public struct JobTimings: Sendable, Hashable, Codable {
    public var enqueuedAt: Date?
    public var receivedAt: Date?
    public var startedAt: Date?
    public var finishedAt: Date?

    public init(enqueuedAt: Date? = nil, receivedAt: Date? = nil, startedAt: Date? = nil, finishedAt: Date? = nil) {
        self.enqueuedAt = enqueuedAt
        self.receivedAt = receivedAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }
}

/// The message a worker publishes when a job ends, before it acknowledges the job. Version 1 of the format.
public struct JobResult: Sendable, Hashable, Codable {
    public var version: Int
    public var jobID: String
    public var type: String?
    /// The job's sequence number, copied from its descriptor.
    public var sequence: UInt64
    public var key: String?
    public var status: JobStatus
    /// What a succeeded operation returned.
    public var output: JSONValue?
    /// Why it failed, when ``status`` is `failed`.
    public var error: JobError?
    /// Why it was cancelled, when ``status`` is `cancelled`.
    public var cancellation: Cancellation?
    /// 1 for the first delivery; higher when the job ran again.
    public var attempt: Int
    /// Whether the broker had delivered this job before (a worker died or lost its connection meanwhile).
    public var redelivered: Bool
    /// When `warren dead requeue` sent the job round again (its `x-warren-requeued-at` header), for a run after
    /// one: its result supersedes those of the runs before, which ended before that instant (``isRerun(of:)``).
    public var requeuedAt: Date?
    public var workerID: String
    public var timings: JobTimings

    enum CodingKeys: String, CodingKey, CaseIterable {
        case version
        case jobID = "jobId"
        case type, sequence, key, status, output, error, cancellation, attempt,
            redelivered, requeuedAt
        case workerID = "workerId"
        case timings
    }

    public init(
        jobID: String, type: String?, sequence: UInt64, key: String?, status: JobStatus, output: JSONValue? = nil,
        error: JobError? = nil, cancellation: Cancellation? = nil, attempt: Int = 1, redelivered: Bool = false,
        requeuedAt: Date? = nil, workerID: String, timings: JobTimings
    ) {
        self.version = WireCoding.version
        self.jobID = jobID
        self.type = type
        self.sequence = sequence
        self.key = key
        self.status = status
        self.output = output
        self.error = error
        self.cancellation = cancellation
        self.attempt = attempt
        self.redelivered = redelivered
        self.requeuedAt = requeuedAt
        self.workerID = workerID
        self.timings = timings
    }

    /// Whether this is the result of a later run of the same job than `earlier`'s, sent round again by
    /// `warren dead requeue` since: it then supersedes `earlier`. Results of the same run (a redelivery's, read
    /// twice) are not reruns of each other.
    public func isRerun(of earlier: JobResult) -> Bool {
        jobID == earlier.jobID && Self.isLater(requeuedAt, than: earlier.requeuedAt)
    }

    /// Whether a run sent round at `requeuedAt` came after one sent round at `earlier` (`nil`: the first run), to
    /// the millisecond: the header's milliseconds and the same instant read back from a result's date differ in
    /// their last bits.
    static func isLater(_ requeuedAt: Date?, than earlier: Date?) -> Bool {
        guard let requeuedAt else { return false }
        func milliseconds(_ date: Date) -> Double { (date.timeIntervalSince1970 * 1000).rounded() }
        return earlier.map { milliseconds(requeuedAt) > milliseconds($0) } ?? true
    }

    /// The JSON body of the message: what `JSONEncoder` writes, written without it where that is sure to give the
    /// same bytes.
    /// - Throws: `EncodingError` for a number in ``output`` that is not finite.
    public func encoded() throws -> [UInt8] {
        try JSONWriter.bytes(for: self) ?? Array(WireCoding.encoder.encode(self))
    }

    /// Decodes a result message body.
    public static func decode(_ body: [UInt8]) throws -> JobResult {
        try JobResultReader.result(from: body) ?? WireCoding.decoder.decode(JobResult.self, from: Data(body))
    }
}
