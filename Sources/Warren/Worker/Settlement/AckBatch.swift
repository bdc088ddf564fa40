/// Acknowledgements of job deliveries, batched: one `basic.ack` with `multiple` covers every acknowledged delivery
/// below the oldest one still open. Acks that a still-open delivery below them prevents from covering go out one
/// by one.
///
/// Acks are held until they are due by ``hold``: once a quarter of the prefetch waits (the broker then refills that
/// much of the window in one go), or once the oldest has waited 2 ms. Every ack frame costs the broker a round of
/// work on the channel and the queue, and the deliveries it answers come back in as many small batches; held acks
/// only delay the refill of a window that still has work in it, never a result, which is published before its job
/// is acknowledged.
///
/// Thread safety: confined to the worker's broker thread.
struct AckBatch {
    /// The acks to send now: one with `multiple` up to `upTo`, and one for each of `singles`.
    struct Acks: Equatable {
        var upTo: UInt64?
        var singles: [UInt64]
    }

    /// When waiting acks are due. Default: each at once.
    var hold = HoldPolicy()
    /// Deliveries received and not yet settled.
    private var open: Set<UInt64> = []
    /// Deliveries settled with an ack that is not sent yet.
    private var acknowledged: [UInt64] = []

    /// Whether no ack waits.
    var isEmpty: Bool { acknowledged.isEmpty }

    /// When the waiting acks are due (now, if they are already); `nil` when none waits.
    var dueAt: ContinuousClock.Instant? { hold.dueAt(count: acknowledged.count) }

    /// A delivery arrived.
    mutating func received(_ tag: UInt64) {
        open.insert(tag)
    }

    /// A delivery is settled with an ack, to send once acks are due.
    mutating func acknowledge(_ tag: UInt64, at now: ContinuousClock.Instant = .now) {
        open.remove(tag)
        hold.added(at: now)
        acknowledged.append(tag)
    }

    /// A delivery is settled with a nack, sent at once by the caller.
    mutating func reject(_ tag: UInt64) {
        open.remove(tag)
    }

    /// The acks to send if they are due at `now` (or with `force`), which are then forgotten; none otherwise.
    mutating func take(at now: ContinuousClock.Instant = .now, force: Bool = false) -> Acks {
        guard let dueAt, force || dueAt <= now else { return Acks(upTo: nil, singles: []) }
        let oldestOpen = open.min() ?? .max
        acknowledged.sort()
        let covered = acknowledged.firstIndex { $0 > oldestOpen } ?? acknowledged.endIndex
        let acks = Acks(
            upTo: covered > 0 ? acknowledged[covered - 1] : nil, singles: Array(acknowledged[covered...]))
        acknowledged.removeAll(keepingCapacity: true)
        hold.reset()
        return acks
    }

    /// A new connection: delivery tags start again.
    mutating func reset() {
        open = []
        acknowledged = []
        hold.reset()
    }
}
