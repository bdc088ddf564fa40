/// The results a worker published and has not yet appended to the `warren.results` stream, to append as one message
/// (``ResultBatch``), and the settlements that wait for that message.
///
/// They are held until they are due by ``hold`` (the worker's whole prefetch window, or 2 ms), or until no job
/// is left in flight whose result could join them. A stream message costs the broker several times what a queue
/// route does, so a batch should hold as many results as come together; the jobs whose results they are are
/// acknowledged once the stream message is published (``Settlements/storeResults(force:)``). The results themselves went out to their
/// reply queue or the results exchange at once.
///
/// Thread safety: confined to the worker's broker thread.
struct StoredResults {
    /// When held results are due. Default: each at once.
    var hold = HoldPolicy()
    /// A batch holds at most this many results. Default: 1,000.
    var maxCount = 1_000
    /// A batch's body holds at most this many bytes, unless one result alone is more. Default: 1 MiB.
    var maxBytes = 1 << 20
    private var bodies: [[UInt8]] = []
    private var byteCount = 0
    /// Settlements that wait for the batch.
    private var settlements: [Settlement] = []

    var isEmpty: Bool { bodies.isEmpty && settlements.isEmpty }

    /// Whether a result of `size` bytes can join the batch; if not, the batch must be appended first.
    func hasRoom(for size: Int) -> Bool {
        bodies.isEmpty
            || (bodies.count < maxCount && byteCount + size + ResultBatch.overhead(count: bodies.count + 1) <= maxBytes)
    }

    /// When the held results are due (now, if they already are); `nil` when none is held.
    var dueAt: ContinuousClock.Instant? { hold.dueAt(count: bodies.count) }

    /// The encoded results so far, for the stream messages that store them (``ResultBatch``); `nil` when none.
    /// One batch, unless ``maxBytes`` fell below what they hold since they were added (the broker told its largest
    /// message): then as many as keep each within it.
    var batches: [[[UInt8]]]? {
        guard !bodies.isEmpty else { return nil }
        guard byteCount + ResultBatch.overhead(count: bodies.count) > maxBytes else { return [bodies] }
        return ResultBatch.split(bodies, maxBytes: maxBytes)
    }

    /// Adds the encoded body of a result published on its own.
    mutating func append(_ body: [UInt8], at now: ContinuousClock.Instant = .now) {
        hold.added(at: now)
        bodies.append(body)
        byteCount += body.count
    }

    /// Makes `settlement` wait for the batch's confirm.
    mutating func waitFor(_ settlement: Settlement) {
        settlements.append(settlement)
    }

    /// The settlements that wait for the batch.
    var waiting: [Settlement] { settlements }

    /// Empties the batch, once its message is published, and returns the settlements that wait for it.
    mutating func clear() -> [Settlement] {
        defer {
            bodies.removeAll(keepingCapacity: true)
            byteCount = 0
            settlements.removeAll(keepingCapacity: true)
            hold.reset()
        }
        return settlements
    }
}
