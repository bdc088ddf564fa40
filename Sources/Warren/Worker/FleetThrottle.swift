import AMQP

/// The jobs of one operation type under a fleet-wide rate limit (``FleetRateLimit``) that wait for a turn from the
/// broker, and the turns asked for and not answered yet.
///
/// At most as many turns are asked for at once as the window holds; a refused turn puts its job back at the head
/// of the line, and the next question waits ``retryDelay``.
///
/// Thread safety: confined to the worker's broker thread.
struct FleetThrottle {
    /// The window queue, and the arguments it is declared with.
    let queue: String
    let arguments: AMQPTable
    let turns: Int
    let retryDelay: Duration
    private var line = WaitingLine()
    /// Turns asked for and not answered yet.
    private(set) var asking = 0
    /// When to ask again after a refusal; `nil`: now.
    private var askAt: ContinuousClock.Instant?
    /// When the window queue was last declared on this connection; `nil`: not yet.
    var declaredAt: ContinuousClock.Instant?

    init(type: String, limit: RateLimit) {
        queue = FleetRateLimit.queue(forType: type, limit: limit)
        arguments = FleetRateLimit.arguments(for: limit)
        turns = FleetRateLimit.window(of: limit).turns
        retryDelay = FleetRateLimit.retryDelay(for: limit)
    }

    /// When to ask for turns next; `nil` while no job waits or every turn the window holds is asked for.
    var dueAt: ContinuousClock.Instant? {
        line.isEmpty || asking >= turns ? nil : askAt ?? .now
    }

    /// Whether turns are to be asked for at `now`.
    func isDue(at now: ContinuousClock.Instant) -> Bool {
        !line.isEmpty && asking < turns && askAt.map { $0 <= now } ?? true
    }

    mutating func wait(_ job: InFlightJob) {
        line.append(job)
    }

    /// The waiting jobs to ask turns for at `now`, in the order they go, counted as asked.
    mutating func jobsToAsk(at now: ContinuousClock.Instant) -> [InFlightJob] {
        if let askAt, now < askAt { return [] }
        askAt = nil
        var jobs: [InFlightJob] = []
        while asking < turns, let job = line.next() {
            line.removeNext()
            asking += 1
            jobs.append(job)
        }
        return jobs
    }

    /// The broker answered the turn asked for `job`: refused, the job waits at the head of the line again.
    mutating func answered(_ job: InFlightJob, granted: Bool, at now: ContinuousClock.Instant) {
        asking -= 1
        guard !granted else { return }
        line.putBack(job)
        askAt = now + retryDelay
    }

    /// Asks no turn before `instant`.
    mutating func postpone(until instant: ContinuousClock.Instant) {
        askAt = instant
    }

    /// The connection was lost with the questions in flight: their jobs wait again, first.
    mutating func unanswered(_ jobs: [InFlightJob]) {
        for job in jobs.reversed() { line.putBack(job) }
        asking = 0
        askAt = nil
        declaredAt = nil
    }
}
