/// The jobs of one rate-limited operation type that wait for their turn (``RateLimit``), and when the next may go.
///
/// A turn comes ``interval`` after the job before it went, so that no two jobs go closer together, whatever the
/// moment the worker's loop wakes (a loop that wakes late makes the rate a little lower, never higher); no burst
/// follows a pause. Jobs wait in a ``WaitingLine``; a cancelled one takes no turn.
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
    private var line = WaitingLine()

    init(_ limit: RateLimit) {
        interval = limit.interval
    }

    /// When the first waiting job's turn comes; `nil` while none waits.
    var dueAt: ContinuousClock.Instant? {
        line.isEmpty ? nil : next ?? .now
    }

    /// Whether `job` may be handed to its local queue at `now`; if not, it waits here for its turn.
    mutating func admit(_ job: InFlightJob, at now: ContinuousClock.Instant) -> Bool {
        if line.isEmpty, takeTurn(at: now) { return true }
        line.append(job)
        return false
    }

    /// The waiting jobs whose turn has come by `now`, in the order they go.
    mutating func due(at now: ContinuousClock.Instant) -> [InFlightJob] {
        var released: [InFlightJob] = []
        while let job = line.next() {
            guard takeTurn(at: now) else { break }
            released.append(job)
            line.removeNext()
        }
        return released
    }

    private mutating func takeTurn(at now: ContinuousClock.Instant) -> Bool {
        if let next, now < next { return false }
        next = now + interval
        return true
    }
}
