/// When things a worker holds back to send together are due: once ``threshold`` of them wait, or once the oldest
/// has waited ``maxDelay``. ``AckBatch`` and ``StoredResults`` hold back by it.
///
/// Thread safety: a value type, confined to the worker's broker thread with its owner.
struct HoldPolicy {
    /// How many waiting things make them due. Default: 1, each is due at once.
    var threshold = 1
    /// How long a thing waits at most. Default: 2 ms.
    var maxDelay = Duration.milliseconds(2)
    /// When the oldest waiting thing was added; `nil` when none waits.
    private var oldestAddedAt: ContinuousClock.Instant?

    /// Notes that a thing was added at `now`.
    mutating func added(at now: ContinuousClock.Instant) {
        if oldestAddedAt == nil { oldestAddedAt = now }
    }

    /// When the `count` waiting things are due (now, if they already are); `nil` when none waits.
    func dueAt(count: Int) -> ContinuousClock.Instant? {
        guard let oldestAddedAt, count > 0 else { return nil }
        return count >= threshold ? oldestAddedAt : oldestAddedAt + maxDelay
    }

    /// Nothing waits any more.
    mutating func reset() {
        oldestAddedAt = nil
    }
}
