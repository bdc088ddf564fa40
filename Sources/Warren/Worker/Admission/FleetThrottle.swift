import AMQP

/// The jobs of one operation type under a fleet-wide rate limit (``FleetRateLimit``) that wait for a turn from the
/// broker, and the turns asked for and not answered yet.
///
/// At most as many turns are asked for at once as the window holds. A refused turn puts its job back at the head of
/// the line; the next question waits about ``retryDelay`` (half to one and a half of it, at random, so that workers
/// share the turns) and asks for one turn only, until one is granted, so that a full window costs the broker one
/// refused publish per worker and delay.
///
/// Thread safety: confined to the worker's broker thread.
struct FleetThrottle {
    /// The window queue, and the arguments it is declared with.
    let queue: String
    let arguments: AMQPTable
    let turns: Int
    let retryDelay: Duration
    /// How long a turn lives in the window.
    let lifetime: Duration
    private var line = WaitingLine()
    /// Turns asked for and not answered yet.
    private(set) var asking = 0
    /// When to ask again after a refusal; `nil`: now.
    private var askAt: ContinuousClock.Instant?
    /// Whether the last answer was a refusal: ask for one turn at a time.
    private var probing = false
    /// When the window queue was last declared on this connection; `nil`: not yet.
    var declaredAt: ContinuousClock.Instant?
    /// Whether the next job's local queue has no thread free for it: a job that ends there wakes the worker.
    var waitsForRoom = false

    init(type: String, limit: RateLimit) {
        queue = FleetRateLimit.queue(forType: type, limit: limit)
        arguments = FleetRateLimit.arguments(for: limit)
        let window = FleetRateLimit.window(of: limit)
        turns = window.turns
        retryDelay = FleetRateLimit.retryDelay(for: limit)
        lifetime = .milliseconds(window.milliseconds)
    }

    /// The most turns to have asked for at once: the window's, or one while probing a full window.
    private var mostAsking: Int { probing ? 1 : turns }

    /// When to ask for turns next; `nil` while no job waits, every turn allowed is asked for, or the next job waits
    /// for a thread.
    var dueAt: ContinuousClock.Instant? {
        line.isEmpty || asking >= mostAsking || waitsForRoom ? nil : askAt ?? .now
    }

    /// Whether turns are to be asked for at `now`.
    func isDue(at now: ContinuousClock.Instant) -> Bool {
        !line.isEmpty && asking < mostAsking && askAt.map { $0 <= now } ?? true
    }

    /// The local queue of the job that comes up next, if one waits.
    mutating func nextLocalQueue() -> String? {
        line.next()?.localQueue
    }

    mutating func wait(_ job: InFlightJob) {
        line.append(job)
    }

    /// The waiting jobs to ask turns for at `now`, at most `room` of them, in the order they go, counted as asked.
    mutating func jobsToAsk(at now: ContinuousClock.Instant, room: Int) -> [InFlightJob] {
        if let askAt, now < askAt { return [] }
        askAt = nil
        var jobs: [InFlightJob] = []
        while asking < mostAsking, jobs.count < room, let job = line.next() {
            line.removeNext()
            asking += 1
            jobs.append(job)
        }
        return jobs
    }

    /// The broker answered the turn asked for `job`: refused, the job waits at the head of the line again.
    mutating func answered(_ job: InFlightJob, granted: Bool, at now: ContinuousClock.Instant) {
        asking -= 1
        probing = !granted
        guard !granted else { return }
        line.putBack(job)
        // Jittered: workers refused together would otherwise keep asking in the same phase, and the one whose
        // questions fall just after a turn expires would take every turn while the others' jobs wait.
        let retry = now + retryDelay * Double.random(in: 0.5...1.5)
        askAt = askAt.map { max($0, retry) } ?? retry
    }

    /// The broker returned a turn at `now`: the window queue is gone. It is declared again once a turn's lifetime
    /// has passed, and no turn is asked before: a turn the broker granted while it deleted the queue is held nowhere.
    mutating func windowMissing(at now: ContinuousClock.Instant) {
        declaredAt = nil
        askAt = max(askAt ?? now, now + lifetime)
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
