/// One measured figure, Warren beside the baseline.
public struct BenchFigure: Sendable, Codable, Hashable {
    /// A goal from issue 5 and whether this run met it (judged on the medians).
    public struct Target: Sendable, Codable, Hashable {
        /// The goal, e.g. `≥ 0.85x baseline` or `< 10 ms`.
        public var goal: String
        /// Whether the medians of this run meet it.
        public var isMet: Bool
    }

    /// Stable name for programs, e.g. `throughput.concurrent.prefetch10`.
    public var key: String
    /// Name for people, e.g. `throughput, producer and worker at once, prefetch 10`.
    public var label: String
    /// `jobs/s`, `ms` or `MB`.
    public var unit: String
    /// Whether a larger value is better (throughput) or worse (latency, CPU, memory).
    public var higherIsBetter: Bool
    /// The raw librabbitmq baseline's values.
    public var baseline: Spread
    /// Warren's values.
    public var warren: Spread
    /// Warren's median over the baseline's.
    public var ratio: Double
    /// The goal this figure is held to, if any.
    public var target: Target?
    /// What the baseline value means when it is not the baseline doing the same thing.
    public var note: String?
}
