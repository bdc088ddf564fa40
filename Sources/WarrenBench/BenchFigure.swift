/// One measured figure: Warren beside the plain raw client, and beside the design's floor when it was measured.
public struct BenchFigure: Sendable, Codable, Hashable {
    /// A goal from issue 35 and whether this run met it (judged on the medians).
    public struct Target: Sendable, Codable, Hashable {
        /// The goal, e.g. `≥ 0.85x raw`, `≤ 1.1x floor` or `≤ 2 ms`.
        public var goal: String
        /// Whether the medians of this run meet it.
        public var isMet: Bool
    }

    /// Stable name for programs, e.g. `throughput.concurrent.prefetch10`.
    public var key: String
    /// Name for people, e.g. `throughput, producer and worker at once, prefetch 10`.
    public var label: String
    /// The name the table shows, e.g. `jobs/s at once, prefetch 10`.
    public var shortLabel: String
    /// `jobs/s`, `ms` or `MB`.
    public var unit: String
    /// Whether a larger value is better (throughput) or worse (latency, CPU, memory).
    public var higherIsBetter: Bool
    /// The plain raw client's values.
    public var baseline: Spread
    /// The design's floor's values; `nil` when the run left it out.
    public var floor: Spread?
    /// Warren's values.
    public var warren: Spread
    /// Warren's median over the plain raw client's.
    public var ratio: Double
    /// Warren's median over the floor's; `nil` when the run left the floor out.
    public var floorRatio: Double?
    /// The goal this figure is held to, if any.
    public var target: Target?
    /// What the raw client's and the floor's values mean when they are not those sides doing the same thing.
    public var note: String?
}
