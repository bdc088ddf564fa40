import Foundation
import Synchronization

/// How a broker thread is doing, kept by the thread itself and read from any other (``report()``): a health
/// endpoint's view of a ``Worker`` (``Worker/health``) or a ``Scheduler`` (``Scheduler/health``).
///
/// The thread counts its turns, and says how long it means to sleep before a long sleep. A turn costs it one atomic
/// increment, not a clock read: it is on every job's path. A reader notes when it first saw the count change, so
/// a thread that neither turns nor wakes within ``stallLimit`` of the later of that and the end of its sleep is
/// stalled, seen by a reader that asks at least as often as a probe does.
///
/// Thread safety: locked, but for the turn count, which is atomic.
public final class BrokerThreadHealth: Sendable {
    private struct State {
        var connection = HealthReport.Connection.connecting
        var broker: String?
        var since = Date()
        var lastError: String?
        var blockedReason: String?
        /// When the thread's last sleep ends, or ended.
        var sleepsUntil = ContinuousClock.now
        /// The turn count a reader last saw, and when it first saw it.
        var turnsSeen: UInt64 = 0
        var turnsSeenAt = ContinuousClock.now
    }

    /// How long past its check-in a thread may be before it counts as stalled: longer than anything a broker
    /// thread waits for in one go (a connection attempt, a broker call, a scheduler's wait for a confirm).
    public static let stallLimit = Duration.seconds(60)

    private let state = Mutex(State())
    private let turns = Atomic<UInt64>(0)

    public init() {}

    /// What the thread last said, and how late it is.
    public func report() -> HealthReport {
        let now = ContinuousClock.now
        let turned = turns.load(ordering: .relaxed)
        return state.withLock { state in
            if turned != state.turnsSeen {
                state.turnsSeen = turned
                state.turnsSeenAt = now
            }
            let checkInBy = max(state.turnsSeenAt, state.sleepsUntil)
            return HealthReport(
                connection: state.connection, broker: state.broker, since: state.since, lastError: state.lastError,
                blockedReason: state.blockedReason, overdue: now > checkInBy ? now - checkInBy : nil)
        }
    }

    // MARK: - Told by the broker thread

    /// A turn begins.
    func turning() {
        turns.add(1, ordering: .relaxed)
    }

    /// The thread sleeps for at most `timeout`. Only sleeps of a second or more are noted (a clock read and a lock):
    /// a shorter one ends, and the next turn is counted, long before the stall limit.
    func sleeping(for timeout: Duration) {
        guard timeout >= .seconds(1) else { return }
        let wakeBy = ContinuousClock.now + timeout
        state.withLock { $0.sleepsUntil = wakeBy }
    }

    /// Connected to `broker` (its URL with the password hidden), queues declared and consumed.
    func connected(to broker: String) {
        change(to: .connected) { state in
            state.broker = broker
            state.lastError = nil
            state.blockedReason = nil
        }
    }

    /// Lost the broker, or failed to connect (again), because of `error`: reconnecting, or still connecting if it
    /// never connected.
    func disconnected(_ error: any Error) {
        let connecting = state.withLock { $0.connection == .connecting }
        change(to: connecting ? .connecting : .reconnecting) { state in
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
