/// Result batches the worker appended to the `warren.results` stream that the broker has not confirmed yet, kept so
/// that they can be appended again: a second after the broker refused one, or as soon as the worker is connected
/// again when the connection died before the confirm came.
///
/// Jobs do not wait for these confirms: a job is acknowledged once its result is confirmed and the batch that
/// stores it has been published, which puts the batch ahead of the ack on the same connection (see
/// ``WorkerSession/storeResults(force:)``). A batch is lost only if the broker fails before writing it and this
/// worker dies before it can append it again; readers of the stream already take a result seen twice as one.
///
/// Thread safety: confined to the worker's broker thread.
struct SentBatches {
    /// How long a refused batch waits before it is appended again. Default: 1 s.
    var retryDelay = Duration.seconds(1)
    /// Published and not yet confirmed, by confirm number.
    private var unconfirmed: [UInt64: [UInt8]] = [:]
    /// To append again, oldest first, from ``resendAt`` on.
    private var toResend: [[UInt8]] = []
    /// When the batches in ``toResend`` are due; `nil` means at once.
    private(set) var resendAt: ContinuousClock.Instant?

    /// Whether every batch is confirmed.
    var isEmpty: Bool { unconfirmed.isEmpty && toResend.isEmpty }

    /// How many batches are not confirmed yet.
    var count: Int { unconfirmed.count + toResend.count }

    /// Notes that `body` was published with confirm number `confirm`.
    mutating func sent(_ body: [UInt8], confirm: UInt64) {
        unconfirmed[confirm] = body
    }

    /// Takes in the broker's confirm (`ack`) or refusal of publishes up to `tag` (all of them with `multiple`,
    /// otherwise `tag` alone); refused batches are due again after ``retryDelay``. Returns how many it refused.
    mutating func confirmed(
        upTo tag: UInt64, multiple: Bool, ack: Bool, now: ContinuousClock.Instant = .now
    ) -> Int {
        let numbers = multiple ? unconfirmed.keys.filter { $0 <= tag }.sorted() : [tag]
        var refused = 0
        for number in numbers {
            guard let body = unconfirmed.removeValue(forKey: number), !ack else { continue }
            toResend.append(body)
            refused += 1
        }
        if refused > 0 { resendAt = now + retryDelay }
        return refused
    }

    /// The connection died, and confirm numbers with it: every unconfirmed batch is due again at once.
    mutating func connectionLost() {
        toResend += unconfirmed.sorted { $0.key < $1.key }.map(\.value)
        unconfirmed = [:]
        resendAt = nil
    }

    /// The oldest batch to append again, if one is due at `now`. Once it is published, report it with
    /// ``resent(confirm:)``. Reads the clock only when a batch waits: the worker asks on every turn of its loop.
    func dueForResend(at now: @autoclosure () -> ContinuousClock.Instant = .now) -> [UInt8]? {
        guard let first = toResend.first else { return nil }
        if let resendAt, resendAt > now() { return nil }
        return first
    }

    /// Notes that the batch ``dueForResend(at:)`` returned was published again with confirm number `confirm`.
    mutating func resent(confirm: UInt64) {
        unconfirmed[confirm] = toResend.removeFirst()
        if toResend.isEmpty { resendAt = nil }
    }
}
