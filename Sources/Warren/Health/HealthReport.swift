import Foundation

/// What a broker thread (a worker's, a scheduler's) last said about itself: whether it has its broker, and whether
/// it still turns. ``BrokerThreadHealth/report()`` makes one; `warren worker --metrics-port` serves them at
/// `/livez` and `/readyz`.
///
/// Thread safety: immutable.
public struct HealthReport: Sendable, Equatable {
    /// Where the thread stands with its broker.
    public enum Connection: String, Sendable {
        /// Connecting for the first time.
        case connecting
        /// Connected, queues declared and consumed.
        case connected
        /// Lost the broker, and trying every address in turn (``HealthReport/lastError`` says why).
        case reconnecting
        /// Stopping: it takes no new work, and finishes what it has.
        case stopping
        /// Stopped.
        case stopped
    }

    public var connection: Connection
    /// The broker it is connected to, or was last, with the password hidden; `nil` before the first connection.
    public var broker: String?
    /// When ``connection`` last changed.
    public var since: Date
    /// Why it lost the broker, or why its last attempt to connect failed; `nil` while connected.
    public var lastError: String?
    /// The broker's reason while it blocks this connection (`connection.blocked`: a memory or disk alarm), else
    /// `nil`. The thread may wait on its socket meanwhile, which is the broker's doing.
    public var blockedReason: String?
    /// How long the thread is past the time it said it would turn again; `nil` while it is on time.
    public var overdue: Duration?

    /// Whether the thread turns: it is at most ``BrokerThreadHealth/stallLimit`` past the time it said it would
    /// turn again, or waits for its broker (connecting or reconnecting: each attempt is bounded by the connect and
    /// call time limits, however many addresses it tries), or on a broker that blocks it, or has stopped. A thread
    /// that is not live is stuck, and only a restart of the process helps.
    public var isLive: Bool {
        guard let overdue, overdue >= BrokerThreadHealth.stallLimit else { return true }
        return blockedReason != nil || [.connecting, .reconnecting, .stopped].contains(connection)
    }

    /// Whether it takes work: connected and not blocked by the broker.
    public var isReady: Bool {
        connection == .connected && blockedReason == nil
    }
}
