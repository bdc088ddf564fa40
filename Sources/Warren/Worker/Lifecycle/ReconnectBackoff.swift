import AMQP

/// The waits between attempts to reconnect: from 100 ms, doubled up to ``Worker/Configuration/maxReconnectDelay``,
/// with jitter.
///
/// A connection the broker closed, refusing something the worker does once connected, within ``steadyConnection``
/// of being made is not reopened at once: the backoff goes on from the last wait, doubled, so that a refusal that
/// repeats costs a reconnect every `maxReconnectDelay`, not ten a second. A broker that went away is looked for
/// again at once, however soon.
/// Thread safety: confined to the worker's broker thread.
struct ReconnectBackoff {
    static let firstDelay = Duration.milliseconds(100)
    /// How long a connection must have lived for its loss to start the backoff over.
    static let steadyConnection = Duration.seconds(30)

    let maxDelay: Duration
    /// When the live connection was made, and the last wait before it.
    private var connectedAt = ContinuousClock.now
    private var lastDelay = Self.firstDelay
    /// Whether the broker closed the last connection lost, or a channel of it, for something it refused (an
    /// `ACCESS_REFUSED`, say), rather than going away (a shutdown, a broken socket, missed heartbeats).
    private var lostToRefusal = false

    init(maxDelay: Duration) {
        self.maxDelay = maxDelay
    }

    /// The connection was lost with `error`.
    mutating func lost(_ error: AMQPError) {
        lostToRefusal = error.code == .channelClosed || (error.code == .connectionClosed && error.replyCode != 320)
    }

    /// How long to wait before the first attempt: nothing, unless the broker refused something soon after the
    /// connection was made.
    var firstWait: Duration? {
        guard lostToRefusal, ContinuousClock.now - connectedAt < Self.steadyConnection else { return nil }
        return min(lastDelay * 2, maxDelay)
    }

    /// A connection was made after waiting `waited` before the last attempt.
    mutating func connected(afterWaiting waited: Duration) {
        connectedAt = .now
        lastDelay = max(waited, Self.firstDelay)
    }
}
