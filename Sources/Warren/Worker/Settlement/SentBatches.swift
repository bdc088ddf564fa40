/// Result batches the worker appended to the `warren.results` stream that the broker has not confirmed yet, kept so
/// that they can be appended again: a second after the broker refused one, or as soon as the worker is connected
/// again when the connection died before the confirm came.
///
/// Batches go out on a confirm channel of their own (``WorkerSession/storeChannel``), so that the broker writes
/// them to the stream in a channel process other than the one routing results: the stream write does not hold up
/// the confirms that results wait for. This type numbers that channel's publishes as the broker does, from 1 on
/// each new channel.
///
/// Jobs do not wait for these confirms: a job is acknowledged once its result is confirmed and the batch that
/// stores it has been published, which puts the batch ahead of the ack on the same connection (see
/// ``WorkerSession/storeResults(force:)``). A batch is lost only if the broker fails before writing it and this
/// worker dies before it can append it again; readers of the stream already take a result seen twice as one.
/// While many batches wait, a new batch holds its jobs' settlements until its own confirm.
///
/// Thread safety: confined to the worker's broker thread.
struct SentBatches {
    private struct Batch {
        /// The encoded results the batch holds (``ResultBatch/body(of:)`` makes its body).
        let results: [[UInt8]]
        /// Settlements waiting for this batch's confirm.
        let settlements: [Settlement]
    }

    /// How long a refused batch waits before it is appended again. Default: 1 s.
    var retryDelay = Duration.seconds(1)
    /// Published and not yet confirmed, by confirm number.
    private var unconfirmed: [UInt64: Batch] = [:]
    /// Publishes on the store channel since it opened: the confirm number of the last one.
    private var published: UInt64 = 0
    /// To append again, oldest first, from ``resendAt`` on.
    private var toResend: [[[UInt8]]] = []
    /// When the batches in ``toResend`` are due; `nil` means at once.
    private(set) var resendAt: ContinuousClock.Instant?

    /// Whether every batch is confirmed.
    var isEmpty: Bool { unconfirmed.isEmpty && toResend.isEmpty }

    /// How many batches are not confirmed yet.
    var count: Int { unconfirmed.count + toResend.count }

    /// Notes that the batch of `results` was published on the store channel; `settlements` wait for its confirm.
    mutating func sent(_ results: [[UInt8]], holding settlements: [Settlement] = []) {
        published += 1
        unconfirmed[published] = Batch(results: results, settlements: settlements)
    }

    /// Takes in the broker's confirm (`ack`) or refusal of publishes up to `tag` (all of them with `multiple`,
    /// otherwise `tag` alone); refused batches are due again after ``retryDelay``.
    /// - Returns: How many batches the broker refused, and the settlements that waited for the batches this
    ///   answer covers (refused ones too: their jobs go back to the broker).
    mutating func confirmed(
        upTo tag: UInt64, multiple: Bool, ack: Bool, now: ContinuousClock.Instant = .now
    ) -> (refused: Int, settlements: [Settlement]) {
        let numbers = multiple ? unconfirmed.keys.filter { $0 <= tag }.sorted() : [tag]
        var refused = 0
        var settlements: [Settlement] = []
        for number in numbers {
            guard let batch = unconfirmed.removeValue(forKey: number) else { continue }
            settlements += batch.settlements
            guard !ack else { continue }
            toResend.append(batch.results)
            refused += 1
        }
        if refused > 0 { resendAt = now + retryDelay }
        return (refused, settlements)
    }

    /// The store channel died, with the connection or alone (the broker closed it for a batch larger than it
    /// takes): every unconfirmed batch is due again at once, and numbering starts again. Returns the settlements
    /// that waited for those batches.
    mutating func channelLost() -> [Settlement] {
        let lost = unconfirmed.sorted { $0.key < $1.key }.map(\.value)
        toResend += lost.map(\.results)
        unconfirmed = [:]
        published = 0
        resendAt = nil
        return lost.flatMap(\.settlements)
    }

    /// The results of the oldest batch to append again, if one is due at `now`. Once they are published, report
    /// it with ``resent(as:)``. Reads the clock only when a batch waits: the worker asks on every turn of its loop.
    func dueForResend(at now: @autoclosure () -> ContinuousClock.Instant = .now) -> [[UInt8]]? {
        guard let first = toResend.first else { return nil }
        if let resendAt, resendAt > now() { return nil }
        return first
    }

    /// Notes that the results ``dueForResend(at:)`` returned were published again on the store channel, as
    /// `batches` (one, or more when the broker's largest message has become smaller than the batch).
    mutating func resent(as batches: [[[UInt8]]]) {
        toResend.removeFirst()
        for batch in batches { sent(batch) }
        if toResend.isEmpty { resendAt = nil }
    }
}
