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
        /// Jobs held for this local queue, not yet started, whatever they wait for: a thread, their dependencies,
        /// their turn under a rate limit (``Job/state`` says which).
        public var waiting: Int
    }

    /// One job a worker holds, as `warren status --jobs` lists it (Celery's `inspect active` and `reserved`).
    public struct Job: Sendable, Hashable, Codable {
        /// Where a held job is: running, or what it waits for. Extensible, as the wire format's readers must be
        /// (§4.4): a state a newer worker reports reads as itself, its ``rawValue``.
        public struct State: RawRepresentable, Sendable, Hashable, Codable {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }

            /// Its code runs (or has just returned).
            public static let executing = State(rawValue: "executing")
            /// In its local queue, waiting for a thread (or, on one, for its turn under a rate limit).
            public static let waiting = State(rawValue: "waiting")
            /// Parked until the jobs it depends on end.
            public static let waitingForDependencies = State(rawValue: "waitingForDependencies")
            /// Waiting for its turn under its type's rate limit, before its local queue.
            public static let waitingForTurn = State(rawValue: "waitingForTurn")
            /// Waiting for the worker to be idle: it was executing when a worker died, and runs alone.
            public static let waitingToRunAlone = State(rawValue: "waitingToRunAlone")
            /// Held, unacknowledged, until a queue it must go to can be reached: the delay queue of its retry or its
            /// wait (refused, or on a cluster node that is down), or the dead letters its failure goes to.
            public static let held = State(rawValue: "held")
        }

        public var id: String
        public var type: String
        public var state: State
        /// The broker queue it came from, and the local queue it runs on.
        public var queue: String
        public var localQueue: String
        public var priority: JobPriority
        public var key: String?
        public var sequence: UInt64
        public var attempt: Int
        /// Seconds since the worker received it.
        public var heldSeconds: Double
        /// Seconds since its code started; `nil` until it has.
        public var executingSeconds: Double?
        /// Its latest progress report, if it made one.
        public var progress: Double?
        public var progressMessage: String?
        /// The time limit that counts for it, in seconds, if it has one: its own or its type's on the worker,
        /// whichever is shorter.
        public var timeLimitSeconds: Double?
        /// Why it was cancelled, for a job cancelled while it executes and not ended yet (its code has not seen
        /// `isCancelled`, or ignores it).
        public var cancelled: String?
        /// `true` for a unique job, which holds its key's lock (``JobRequest/uniqueFor``); `nil` otherwise.
        public var unique: Bool?
        /// For a job ``State/waitingForDependencies``: the ids of the dependencies it still waits for (not ended, or
        /// their results not read yet), sorted, at most ``maxWaitingOn``; `nil` otherwise.
        public var waitingOn: [String]?

        /// The most dependency ids ``waitingOn`` lists.
        public static let maxWaitingOn = 20

        enum CodingKeys: String, CodingKey {
            case id, type, state, queue, localQueue, priority, key, sequence, attempt, heldSeconds, executingSeconds,
                progress, progressMessage, timeLimitSeconds, cancelled, unique, waitingOn
        }

        /// A job as a worker lists it; for tools that build or relay status replies.
        public init(
            id: String, type: String, state: State, queue: String, localQueue: String, priority: JobPriority,
            key: String?, sequence: UInt64, attempt: Int, heldSeconds: Double, executingSeconds: Double?,
            progress: Double?, progressMessage: String?, timeLimitSeconds: Double?, cancelled: String?,
            unique: Bool? = nil, waitingOn: [String]? = nil
        ) {
            self.id = id
            self.type = type
            self.state = state
            self.queue = queue
            self.localQueue = localQueue
            self.priority = priority
            self.key = key
            self.sequence = sequence
            self.attempt = attempt
            self.heldSeconds = heldSeconds
            self.executingSeconds = executingSeconds
            self.progress = progress
            self.progressMessage = progressMessage
            self.timeLimitSeconds = timeLimitSeconds
            self.cancelled = cancelled
            self.unique = unique
            self.waitingOn = waitingOn
        }
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
    /// The jobs it holds, when the request asked for them (`warren status --jobs`): executing ones first, longest
    /// running first, then the others by priority and arrival; at most as many as asked for.
    public var jobs: [Job]?
    /// How many more jobs it holds than ``jobs`` lists.
    public var moreJobs: Int?
    /// Why it takes no more jobs and starts afresh once those it holds end, while it does: `maxJobs` or
    /// `maxMemory` (``Worker/Configuration/maxJobs``, ``Worker/Configuration/maxResidentMemory``).
    public var recycling: String?
    /// `true` while the worker stops (SIGTERM, SIGINT, SIGHUP, ``Worker/stop()``): it takes no more jobs, and lets
    /// those executing end within its grace period; else absent.
    public var stopping: Bool?

    enum CodingKeys: String, CodingKey {
        case version
        case workerID = "workerId"
        case host, pid, startedAt, uptimeSeconds, queues, pausedQueues, prefetch,
            localQueues, totals, jobs, moreJobs, recycling, stopping
    }

    /// Decodes a status message body.
    public static func decode(_ body: [UInt8]) throws -> WorkerStatus {
        try WireCoding.decoder.decode(WorkerStatus.self, from: Data(body))
    }
}
