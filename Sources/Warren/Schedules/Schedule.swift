import Foundation

/// A job enqueued again and again: Celery beat's entries, Sidekiq's periodic jobs, a Kubernetes CronJob.
///
/// A ``Scheduler`` enqueues one job per tick of ``recurrence``, with the id `NAME:YYYYMMDDTHHMMSSZ` (the tick in
/// UTC), so that the job of a tick is known by its id wherever it went.
///
/// ```swift
/// let nightly = Schedule(
///     name: "nightly-report", recurrence: .cron(try CronExpression("0 3 * * *"), TimeZone(identifier: "Europe/Paris")!),
///     type: "report", input: ["scope": "all"])
/// ```
///
/// Thread safety: immutable (a value).
public struct Schedule: Sendable, Equatable {
    /// Names the schedule among all the schedulers of a broker, and prefixes its jobs' ids: 1 to 64 letters,
    /// digits, `-`, `_` or `.`.
    public var name: String
    public var recurrence: Recurrence
    /// The operation type of its jobs.
    public var type: String
    public var input: JSONValue
    /// Default: ``JobPriority/normal``.
    public var priority: JobPriority
    /// The key of its jobs (``JobRequest/key``). Default: none.
    public var key: String?
    /// With ``key``: each job cancels the earlier jobs of its key that still wait or run, as a Kubernetes CronJob's
    /// `Replace` policy does. Default: `false`, a tick's job runs even while the one before still does.
    public var supersede: Bool
    /// The broker queue. Default: `warren.default`.
    public var queue: String
    /// How many times a job runs when its handler fails with a retryable error. Default: `nil`, the descriptor's
    /// default (3).
    public var maxAttempts: Int?
    /// A job not started this long after it was enqueued is not started. Default: none.
    public var deadline: Duration?
    /// The longest a job's code may run (``JobRequest/timeLimit``). Default: none.
    public var timeLimit: Duration?
    /// With ``key``: each job is unique for its key (``JobRequest/uniqueFor``), so a tick whose earlier job of the
    /// key still waits or runs is skipped, as a Kubernetes CronJob's `Forbid` policy does; its lock lasts at most
    /// this long. Not with ``supersede``. Default: none, a tick's job runs even while the one before still does.
    public var uniqueFor: Duration?
    /// When no scheduler ran at a tick, the most recent tick missed is enqueued once, late, when one runs again;
    /// one later than this is skipped instead. At least a second. Default: `nil`, enqueued however late (as Celery
    /// beat and a CronJob without `startingDeadlineSeconds` do).
    public var maxLateness: Duration?

    public init(
        name: String, recurrence: Recurrence, type: String, input: JSONValue = .null, priority: JobPriority = .normal,
        key: String? = nil, supersede: Bool = false, queue: String = Topology.defaultQueue, maxAttempts: Int? = nil,
        deadline: Duration? = nil, timeLimit: Duration? = nil, uniqueFor: Duration? = nil,
        maxLateness: Duration? = nil
    ) {
        self.name = name
        self.recurrence = recurrence
        self.type = type
        self.input = input
        self.priority = priority
        self.key = key
        self.supersede = supersede
        self.queue = queue
        self.maxAttempts = maxAttempts
        self.deadline = deadline
        self.timeLimit = timeLimit
        self.uniqueFor = uniqueFor
        self.maxLateness = maxLateness
    }

    /// The longest ``name``, in bytes: the job ids it prefixes must fit in ``OperationDescriptor/maxIDLength``.
    public static let maxNameLength = 64

    /// Why this schedule cannot run, or `nil` when it can.
    public var problem: String? {
        // A job id's characters, but for the ':' that separates the tick in its jobs' ids.
        guard name.utf8.count <= Self.maxNameLength, OperationDescriptor.problem(withID: name) == nil,
            !name.contains(":")
        else {
            return
                "schedule name '\(name.prefix(80))' must be 1 to \(Self.maxNameLength) letters, digits, '-', '_' or '.'"
        }
        if case .every(let interval) = recurrence,
            interval < Recurrence.shortestInterval || interval.components.attoseconds != 0
        {
            return "schedule '\(name)': its interval must be a whole number of seconds, at least 1 (got \(interval))"
        }
        if type.isEmpty { return "schedule '\(name)' names no operation type" }
        if let problem = OperationDescriptor.problem(withType: type) { return "schedule '\(name)': \(problem)" }
        if let problem = Topology.problem(withJobQueue: queue) { return "schedule '\(name)': \(problem)" }
        if supersede, key == nil { return "schedule '\(name)': supersede needs a key" }
        if let maxAttempts, maxAttempts < 1 { return "schedule '\(name)': maxAttempts must be at least 1" }
        if let deadline, deadline <= .zero {
            return "schedule '\(name)': deadline must be above 0 (a job past its deadline never starts)"
        }
        if let timeLimit, let problem = OperationDescriptor.problem(withTimeLimit: timeLimit / .seconds(1)) {
            return "schedule '\(name)': timeLimit: \(problem)"
        }
        if let uniqueFor {
            if supersede { return "schedule '\(name)': uniqueFor and supersede: give one or the other" }
            if let problem = UniqueLock.problem(withLifetime: uniqueFor / .seconds(1))
                ?? OperationDescriptor.problem(withUniqueKey: key)
            {
                return "schedule '\(name)': uniqueFor: \(problem)"
            }
        }
        if let maxLateness, maxLateness < .seconds(1) {
            // A job is enqueued milliseconds after its tick: a smaller limit would skip every tick.
            return "schedule '\(name)': maxLateness must be at least 1 s"
        }
        return nil
    }

    /// The job of `tick`, enqueued at `now`.
    func request(for tick: Date, now: Date) -> JobRequest {
        JobRequest(
            type: type, input: input, priority: priority, key: key, supersede: supersede, queue: queue,
            deadline: deadline.map { now.addingTimeInterval($0.seconds) }, maxAttempts: maxAttempts,
            timeLimit: timeLimit, uniqueFor: uniqueFor, id: Self.jobID(name: name, tick: tick))
    }

    /// `NAME:YYYYMMDDTHHMMSSZ`.
    static func jobID(name: String, tick: Date) -> String {
        "\(name):\(tick.formatted(tickStamp))"
    }

    /// The tick in a job id: ISO 8601 in UTC without separators or fractions.
    private static let tickStamp = Date.ISO8601FormatStyle().year().month().day().dateSeparator(.omitted)
        .time(includingFractionalSeconds: false).timeSeparator(.omitted).timeZone(separator: .omitted)
}
