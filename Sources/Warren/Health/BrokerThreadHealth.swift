import Foundation
import Synchronization

/// How a broker thread is doing, kept by the thread itself and read from any other (``report()``): a health
/// endpoint's view of a ``Worker`` (``Worker/health``) or a ``Scheduler`` (``Scheduler/health``).
///
/// The thread checks in as each turn begins, and says how long it means to sleep before it sleeps; one that
/// neither turns nor wakes within ``stallLimit`` of when it said it would is stalled.
///
/// Thread safety: locked.
public final class BrokerThreadHealth: Sendable {
    private struct State {
        var connection = HealthReport.Connection.connecting
        var broker: String?
        var since = Date()
        var lastError: String?
        var blockedReason: String?
        /// When the thread means to turn again: now while it turns, the end of its sleep while it sleeps.
        var checkInBy = ContinuousClock.now
    }

    /// How long past its check-in a thread may be before it counts as stalled: longer than anything a broker
    /// thread waits for in one go (a connection attempt, a broker call, a scheduler's wait for a confirm).
    public static let stallLimit = Duration.seconds(60)

    private let state = Mutex(State())

    public init() {}

    /// What the thread last said, and how late it is.
    public func report() -> HealthReport {
        let now = ContinuousClock.now
        return state.withLock { state in
            HealthReport(
                connection: state.connection, broker: state.broker, since: state.since, lastError: state.lastError,
                blockedReason: state.blockedReason, overdue: now > state.checkInBy ? now - state.checkInBy : nil)
        }
    }

    // MARK: - Told by the broker thread

    /// A turn begins.
    func turning() {
        let now = ContinuousClock.now
        state.withLock { $0.checkInBy = now }
    }

    /// The thread sleeps for at most `timeout`.
    func sleeping(for timeout: Duration) {
        let wakeBy = ContinuousClock.now + max(timeout, .zero)
        state.withLock { $0.checkInBy = wakeBy }
    }

    /// Connected to `broker` (its URL with the password hidden), queues declared and consumed.
    func connected(to broker: String) {
        change(to: .connected) { state in
            state.broker = broker
            state.lastError = nil
            state.blockedReason = nil
        }
    }

    /// Lost the broker, or failed to connect again, because of `error`.
    func disconnected(_ error: any Error) {
        change(to: .reconnecting) { state in
            state.lastError = "\(error)"
            state.blockedReason = nil
        }
    }

    /// The broker blocks the connection for `reason` (`nil`: it unblocked it).
    func blocked(_ reason: String?) {
        state.withLock { $0.blockedReason = reason }
    }

    func stopping() {
        change(to: .stopping) { _ in }
    }

    func stopped() {
        change(to: .stopped) { _ in }
    }

    /// Sets the connection state, and when it began if it changed; a stopping thread stays stopping until it
    /// stopped, whatever its connection does meanwhile.
    private func change(to connection: HealthReport.Connection, _ body: (inout State) -> Void) {
        let now = Date()
        state.withLock { state in
            let stays = state.connection == .stopping && connection != .stopped
            if state.connection != connection && !stays {
                state.connection = connection
                state.since = now
            }
            body(&state)
        }
    }
}
