import Foundation

/// What a producer asks for: an operation type, its input and how to schedule it.
public struct JobRequest: Sendable {
    public var type: String
    public var input: JSONValue
    /// Default: ``JobPriority/normal``.
    public var priority: JobPriority
    /// Jobs of the same key compute the same thing; the newest sequence wins.
    public var key: String?
    /// Cancel every older job of ``key`` when this one is enqueued. Default: `false`.
    public var supersede: Bool
    /// The broker queue. Default: `warren.default`.
    public var queue: String
    /// Past this instant the job is not started. Default: none.
    public var deadline: Date?
    /// The job does not start before this instant; it waits in the broker's delay queues until then. Default: none
    /// (at once).
    public var notBefore: Date?
    /// Jobs (by id) that must end before this one starts: jobs enqueued earlier with this state directory (its job
    /// journal, next to the sequence file), or jobs of the same ``SharedProducer/enqueue(_:watch:)-([JobRequest],_)``
    /// call. Default: none.
    public var dependencies: [String]
    /// With ``dependencies``: end `cancelled` instead of running when one of them did not succeed. Default: `false`.
    public var requireSuccess: Bool
    /// Whether the producer refuses a dependency it cannot vouch for: an id neither in the same call nor in this
    /// state directory's journal. `false` lets the job depend on a job enqueued elsewhere (another host, another
    /// client); a mistyped id then waits until the job is cancelled. Ids must be valid job ids either way.
    /// Default: `true`.
    public var checksDependencies = true
    /// How many times the job runs when its handler fails with a retryable error. Default: `nil`, the
    /// descriptor's default (3).
    public var maxAttempts: Int?
    /// The longest the job's code may run once started (1 ms to a year), Celery's `time_limit`: past it the worker
    /// cancels the job, and it ends `failed` (`timeLimit`). A worker's limit for the job's type applies too; the
    /// shorter one counts. Default: none.
    public var timeLimit: Duration?
    /// Makes the job unique for its ``key`` (Sidekiq's unique jobs): it is enqueued only if no other job of that key
    /// holds the key's lock, and then holds it until it ends for good (succeeded, failed, cancelled or
    /// dead-lettered; not between retries), or for at most this long (1 second to 7 days), whichever comes first.
    /// When the lock is held, ``SharedProducer/enqueue(_:watch:)-(JobRequest,_)`` throws ``WarrenError/Code/duplicate``
    /// and enqueues nothing. Needs a ``key`` of 1 to ``OperationDescriptor/maxUniqueKeyLength`` bytes; not with
    /// ``supersede``.
    /// Default: none.
    public var uniqueFor: Duration?
    /// A queue that receives the job's result and progress reports, through the default exchange, instead of
    /// the `warren.results` exchange (its `reply_to` property). It must exist when the job is enqueued (else
    /// ``SharedProducer/enqueue(_:watch:)-(JobRequest,_)`` throws `invalidConfiguration`) and when it ends, or the result
    /// is only in the results stream. Default: none. A job enqueued with `watch: true` uses the producer's own.
    public var replyTo: String?
    /// The job id. Default: a new UUID.
    public var id: String

    public init(
        type: String, input: JSONValue = .null, priority: JobPriority = .normal, key: String? = nil,
        supersede: Bool = false, queue: String = Topology.defaultQueue, deadline: Date? = nil,
        notBefore: Date? = nil, maxAttempts: Int? = nil, timeLimit: Duration? = nil, uniqueFor: Duration? = nil,
        dependencies: [String] = [], requireSuccess: Bool = false, replyTo: String? = nil,
        id: String = UUID().uuidString.lowercased()
    ) {
        self.type = type
        self.input = input
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
        self.replyTo = replyTo
        self.id = id
    }
}
