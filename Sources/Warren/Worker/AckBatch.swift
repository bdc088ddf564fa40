/// Acknowledgements of job deliveries, batched: one `basic.ack` with `multiple` covers every acknowledged delivery
/// below the oldest one still open, so a worker asks the broker for one ack per loop iteration, not one per job.
/// Acks that a still-open delivery below them prevents from covering go out one by one. None waits past the
/// iteration that settled it.
///
/// Thread safety: confined to the worker's broker thread.
struct AckBatch {
    /// Deliveries received and not yet settled.
    private var open: Set<UInt64> = []
    /// Deliveries settled with an ack that is not sent yet.
    private var acknowledged: [UInt64] = []

    /// The acks to send now: one with `multiple` up to `upTo`, and one for each of `singles`.
    struct Acks: Equatable {
        var upTo: UInt64?
        var singles: [UInt64]
    }

    /// A delivery arrived.
    mutating func received(_ tag: UInt64) {
        open.insert(tag)
    }

    /// A delivery is settled with an ack, to send with the next ``take()``.
    mutating func acknowledge(_ tag: UInt64) {
        open.remove(tag)
        acknowledged.append(tag)
    }

    /// A delivery is settled with a nack, sent at once by the caller.
    mutating func reject(_ tag: UInt64) {
        open.remove(tag)
    }

    /// The acks to send, which are then forgotten.
    mutating func take() -> Acks {
        guard !acknowledged.isEmpty else { return Acks(upTo: nil, singles: []) }
        let oldestOpen = open.min() ?? .max
        acknowledged.sort()
        let covered = acknowledged.firstIndex { $0 > oldestOpen } ?? acknowledged.endIndex
        let acks = Acks(
            upTo: covered > 0 ? acknowledged[covered - 1] : nil, singles: Array(acknowledged[covered...]))
        acknowledged.removeAll(keepingCapacity: true)
        return acks
    }

    /// A new connection: delivery tags start again.
    mutating func reset() {
        open = []
        acknowledged = []
    }
}
