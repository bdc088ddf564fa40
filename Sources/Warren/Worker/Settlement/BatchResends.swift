/// Result batches to append to the `warren.results` stream again: a second after the broker refused one, or as soon
/// as the worker is connected again when the store channel or the connection died before the confirm came.
///
/// The store channel (``BrokerLink/Channel/store``) tracks the batches awaiting their confirms; these are the ones
/// that need sending again. A batch is lost only if the broker fails before writing it and this worker dies before
/// it can append it again; readers of the stream already take a result seen twice as one.
/// Thread safety: confined to the worker's broker thread.
struct BatchResends {
    /// How long a refused batch waits before it is appended again. Default: 1 s.
    var retryDelay = Duration.seconds(1)
    /// To append again, oldest first, from ``resendAt`` on.
    private var toResend: [[[UInt8]]] = []
    /// When the batches are due; `nil` means at once.
    private(set) var resendAt: ContinuousClock.Instant?

    var isEmpty: Bool { toResend.isEmpty }
    var count: Int { toResend.count }

    /// The broker refused the batch of `results`: it is due again after ``retryDelay``.
    mutating func refused(_ results: [[UInt8]], at now: ContinuousClock.Instant = .now) {
        toResend.append(results)
        resendAt = now + retryDelay
    }

    /// The channel died with the batches of `results` unconfirmed: they are due again at once.
    mutating func lost(_ results: [[[UInt8]]]) {
        toResend += results
        resendAt = nil
    }

    /// The results of the oldest batch to append again, if one is due at `now`. Once they are published, report it
    /// with ``resent()``. Reads the clock only when a batch waits: the worker asks on every turn of its loop.
    func dueForResend(at now: @autoclosure () -> ContinuousClock.Instant = .now) -> [[UInt8]]? {
        guard let first = toResend.first else { return nil }
        if let resendAt, resendAt > now() { return nil }
        return first
    }

    /// The batch ``dueForResend(at:)`` returned went out again.
    mutating func resent() {
        toResend.removeFirst()
        if toResend.isEmpty { resendAt = nil }
    }
}
