/// Reads of single messages of the `warren.results` stream, by offset: how a worker gets the results of
/// dependencies that ended before their dependents arrived (``WorkerSession/holdForDependencies(_:)``). Each offset
/// is read once, by a consumer of its own that stops after the message at that offset, for every job whose result
/// is wanted from it. At most ``maxReads`` offsets are read at once, the others in turn: a job with thousands of
/// dependencies would otherwise open a consumer for each, one broker call after another, before the worker could
/// handle anything else.
///
/// Thread safety: confined to the worker's broker thread.
struct ResultFetches {
    /// How many offsets are read at once.
    let maxReads: Int
    /// The offset each fetch consumer reads, by consumer tag.
    private var offsets: [String: UInt64] = [:]
    /// The jobs whose results are wanted from each offset being read, or waiting to be.
    private var wanted: [UInt64: Set<String>] = [:]
    /// Offsets wanted and not read yet, in the order they were first wanted.
    private var waiting: [UInt64] = []

    init(maxReads: Int = 16) {
        self.maxReads = maxReads
    }

    /// Records that `jobID`'s result is wanted from `offset`; an offset wanted for the first time waits for
    /// ``nextRead()``.
    mutating func want(_ jobID: String, at offset: UInt64) {
        if wanted[offset, default: []].insert(jobID).inserted && wanted[offset]!.count == 1 { waiting.append(offset) }
    }

    /// The next offset to read, if fewer than ``maxReads`` are read: start its consumer, then report it with
    /// ``started(_:reading:)``.
    mutating func nextRead() -> UInt64? {
        guard offsets.count < maxReads, !waiting.isEmpty else { return nil }
        return waiting.removeFirst()
    }

    /// Records the consumer that reads `offset`.
    mutating func started(_ consumerTag: String, reading offset: UInt64) {
        offsets[consumerTag] = offset
    }

    /// The offset `consumerTag` reads; `nil` for a consumer that is no fetch, or one whose fetch ended.
    func offset(readBy consumerTag: String) -> UInt64? {
        offsets[consumerTag]
    }

    /// Ends the fetch of `consumerTag`, and returns the job ids whose results were wanted from its offset.
    mutating func finish(_ consumerTag: String) -> Set<String> {
        guard let offset = offsets.removeValue(forKey: consumerTag) else { return [] }
        return wanted.removeValue(forKey: offset) ?? []
    }

    /// Forgets every fetch: their consumers died with the connection.
    mutating func removeAll() {
        offsets = [:]
        wanted = [:]
        waiting = []
    }
}
