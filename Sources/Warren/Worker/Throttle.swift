/// The jobs of one rate-limited operation type that wait for their turn (``RateLimit``), and when the next may go.
///
/// A turn comes ``interval`` after the job before it went, so that no two jobs go closer together, whatever the
/// moment the worker's loop wakes (a loop that wakes late makes the rate a little lower, never higher); no burst
/// follows a pause. Jobs waiting go highest priority first, then in the order they came.
///
/// Thread safety: confined to the worker's broker thread.
struct Throttle {
    let interval: Duration
    /// When the next turn comes; `nil`: now.
    private var next: ContinuousClock.Instant?
    private(set) var waiting: [InFlightJob] = []

    init(_ limit: RateLimit) {
        interval = limit.interval
    }

    /// When the first waiting job's turn comes; `nil` while none waits.
    var dueAt: ContinuousClock.Instant? {
        waiting.isEmpty ? nil : next ?? .now
    }

    /// Whether `job` may be handed to its local queue at `now`; if not, it waits here for its turn.
    mutating func admit(_ job: InFlightJob, at now: ContinuousClock.Instant) -> Bool {
        if waiting.isEmpty, takeTurn(at: now) { return true }
        waiting.append(job)
        return false
    }

    /// The waiting jobs whose turn has come by `now`, in the order they go.
    mutating func due(at now: ContinuousClock.Instant) -> [InFlightJob] {
        waiting.removeAll { $0.operation.job.isCancelled }  // they end without a turn
        var released: [InFlightJob] = []
        while let best = waiting.indices.max(by: { waiting[$0].descriptor.priority < waiting[$1].descriptor.priority }),
            takeTurn(at: now)
        {
            released.append(waiting.remove(at: best))
        }
        return released
    }

    /// Forgets a waiting job that ended without its turn (cancelled, paused, the worker stopping).
    mutating func remove(_ jobID: String) {
        waiting.removeAll { $0.descriptor.id == jobID }
    }

    private mutating func takeTurn(at now: ContinuousClock.Instant) -> Bool {
        if let next, now < next { return false }
        next = now + interval
        return true
    }
}
