/// A component of the worker with something to do at a time of its own: the broker thread's loop sleeps no longer
/// than until the earliest such time, over all components.
///
/// Thread safety: confined to the worker's broker thread, as the components are.
protocol WakesTheLoop: AnyObject {
    /// When the component has something to do next; `nil` when nothing waits for a time.
    var nextWake: ContinuousClock.Instant? { get }
}

extension Optional where Wrapped == ContinuousClock.Instant {
    /// The earlier of this time and `other`, either of which may be none. For `nextWake`s, without an array per turn.
    @inline(__always)
    func earliest(_ other: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard let self else { return other }
        guard let other else { return self }
        return Swift.min(self, other)
    }
}
