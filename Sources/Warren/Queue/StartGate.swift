import Synchronization

/// The starts of one rate-limited operation type's jobs, kept at least ``interval`` apart where they happen: on the
/// threads of the local queue. The worker hands such jobs over at that pace already (``Throttle``); the gate holds
/// back the ones that reach a free thread closer together than that (handed over while the queue was full, they
/// would otherwise start together once threads free up).
///
/// Thread safety: locked. Operations on any thread reserve their start behind a `Mutex`.
final class StartGate: Sendable {
    let interval: Duration
    private let next = Mutex<ContinuousClock.Instant?>(nil)

    init(interval: Duration) {
        self.interval = interval
    }

    /// When the next job may start, `nil`: now; set to move it (a fresh copy of a recycled worker keeps its pace).
    var nextTurn: ContinuousClock.Instant? {
        get { next.withLock { $0 } }
        set { next.withLock { $0 = newValue } }
    }

    /// Takes the turn to start at `now` if it has come (`nil`: start now); otherwise returns how long until it
    /// comes, when whoever claims it first, of all that wait, starts.
    func claim(at now: ContinuousClock.Instant = .now) -> Duration? {
        next.withLock { next in
            if let next, now < next { return next - now }
            next = now + interval
            return nil
        }
    }
}
