/// The jobs of one rate-limited operation type that wait for their turn (``RateLimit``), and when the next may go.
///
/// A turn comes ``interval`` after the job before it went, so that no two jobs go closer together, whatever the
/// moment the worker's loop wakes (a loop that wakes late makes the rate a little lower, never higher); no burst
/// follows a pause. Jobs waiting go highest priority first, then in the order they came. A job that ends while it
/// waits (it can only be cancelled) is dropped when its turn would come, and takes none.
///
/// Thread safety: confined to the worker's broker thread.
struct Throttle {
    let interval: Duration
    /// When the next turn comes; `nil`: now.
    private var next: ContinuousClock.Instant?

    /// When the next turn comes, `nil`: now; set to move it (a fresh copy of a recycled worker keeps its pace).
    var nextTurn: ContinuousClock.Instant? {
        get { next }
        set { next = newValue }
    }
    /// The waiting jobs by priority, lowest first, each in arrival order from its `start`.
    private var lines = Array(repeating: Line(), count: JobPriority.allCases.count)

    private struct Line {
        var jobs: [InFlightJob] = []
        var start = 0
        var isEmpty: Bool { start == jobs.count }
    }

    init(_ limit: RateLimit) {
        interval = limit.interval
    }

    /// When the first waiting job's turn comes; `nil` while none waits.
    var dueAt: ContinuousClock.Instant? {
        lines.allSatisfy(\.isEmpty) ? nil : next ?? .now
    }

    /// Whether `job` may be handed to its local queue at `now`; if not, it waits here for its turn.
    mutating func admit(_ job: InFlightJob, at now: ContinuousClock.Instant) -> Bool {
        if lines.allSatisfy(\.isEmpty), takeTurn(at: now) { return true }
        lines[Self.level(of: job.descriptor.priority)].jobs.append(job)
        return false
    }

    /// The waiting jobs whose turn has come by `now`, in the order they go.
    mutating func due(at now: ContinuousClock.Instant) -> [InFlightJob] {
        var released: [InFlightJob] = []
        while let job = nextWaiting() {
            guard takeTurn(at: now) else { break }
            released.append(job)
            removeFirst(at: Self.level(of: job.descriptor.priority))
        }
        return released
    }

    /// The job whose turn comes next, after dropping the cancelled ones ahead of it.
    private mutating func nextWaiting() -> InFlightJob? {
        for level in lines.indices.reversed() {
            while !lines[level].isEmpty {
                let job = lines[level].jobs[lines[level].start]
                guard job.operation.job.isCancelled else { return job }
                removeFirst(at: level)
            }
        }
        return nil
    }

    private static func level(of priority: JobPriority) -> Int {
        Int(priority.amqpPriority) - 1
    }

    private mutating func removeFirst(at level: Int) {
        lines[level].start += 1
        if lines[level].isEmpty {
            lines[level] = Line()
        } else if lines[level].start >= 1024, lines[level].start * 2 >= lines[level].jobs.count {
            lines[level].jobs.removeFirst(lines[level].start)
            lines[level].start = 0
        }
    }

    private mutating func takeTurn(at now: ContinuousClock.Instant) -> Bool {
        if let next, now < next { return false }
        next = now + interval
        return true
    }
}
