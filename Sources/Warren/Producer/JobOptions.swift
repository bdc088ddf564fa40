import Foundation

/// How to schedule a typed job: everything a ``JobRequest`` holds but its type and input.
///
/// ```swift
/// let job = try await producer.enqueue(
///     Thumbnail.self, .init(url: url, size: 128),
///     options: JobOptions(priority: .high, key: "thumbnail-\(url)", supersede: true))
/// ```
///
/// Each option means what the ``JobRequest`` property of the same name means.
public struct JobOptions: Sendable {
    /// Default: ``JobPriority/normal``.
    public var priority: JobPriority
    /// Jobs of the same key compute the same thing; the newest sequence wins. Default: none.
    public var key: String?
    /// Cancel every older job of ``key`` when this one is enqueued. Default: `false`.
    public var supersede: Bool
    /// The broker queue. Default: `warren.default`.
    public var queue: String
    /// Past this instant the job is not started. Default: none.
    public var deadline: Date?
    /// The job does not start before this instant. Default: none, at once.
    public var notBefore: Date?
    /// How many times the job runs when its handler fails with a retryable error. Default: `nil`, 3.
    public var maxAttempts: Int?
    /// The longest the job's code may run once started, 1 ms to a year. Default: none.
    public var timeLimit: Duration?
    /// Makes the job unique for its ``key`` for at most this long (``JobRequest/uniqueFor``). Default: none.
    public var uniqueFor: Duration?
    /// Jobs, by id, that must end before this one starts. Default: none.
    public var dependencies: [String]
    /// With ``dependencies``: end `cancelled` instead of running when one of them did not succeed. Default: `false`.
    public var requireSuccess: Bool
    /// Whether the producer refuses a dependency it cannot vouch for (``JobRequest/checksDependencies``).
    /// Default: `true`.
    public var checksDependencies: Bool
    /// The job id. Default: `nil`, a new UUID.
    public var id: String?

    /// Options; each left out takes its default.
    public init(
        priority: JobPriority = .normal, key: String? = nil, supersede: Bool = false,
        queue: String = Topology.defaultQueue, deadline: Date? = nil, notBefore: Date? = nil, maxAttempts: Int? = nil,
        timeLimit: Duration? = nil, uniqueFor: Duration? = nil, dependencies: [String] = [],
        requireSuccess: Bool = false, checksDependencies: Bool = true, id: String? = nil
    ) {
        self.priority = priority
        self.key = key
        self.supersede = supersede
        self.queue = queue
        self.deadline = deadline
        self.notBefore = notBefore
        self.maxAttempts = maxAttempts
        self.timeLimit = timeLimit
        self.uniqueFor = uniqueFor
        self.dependencies = dependencies
        self.requireSuccess = requireSuccess
        self.checksDependencies = checksDependencies
        self.id = id
    }

    /// The request for a job of `definition` with `input` and these options.
    /// - Throws: ``WarrenError`` (`invalidInput`) when `input` cannot be encoded as JSON, naming the field.
    public func request<Definition: OperationDefinition>(
        for definition: Definition.Type, input: Definition.Input
    ) throws -> JobRequest {
        let json: JSONValue
        do {
            json = try input as? JSONValue ?? JSONValue(encoding: input)
        } catch let error as EncodingError {
            throw WarrenError(
                .invalidInput,
                "input of operation type '\(Definition.type)' cannot be sent: \(error.summary(root: "input"))")
        }
        var request = JobRequest(
            type: Definition.type, input: json, priority: priority, key: key, supersede: supersede, queue: queue,
            deadline: deadline, notBefore: notBefore, maxAttempts: maxAttempts, timeLimit: timeLimit,
            uniqueFor: uniqueFor, dependencies: dependencies, requireSuccess: requireSuccess)
        request.checksDependencies = checksDependencies
        if let id { request.id = id }
        return request
    }
}
