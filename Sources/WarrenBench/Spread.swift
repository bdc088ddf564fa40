/// A figure's value over the repetitions: the median, the range, and every sample.
public struct Spread: Sendable, Codable, Hashable {
    /// The median over the repetitions.
    public var median: Double
    /// The lowest value of a repetition.
    public var min: Double
    /// The highest value of a repetition.
    public var max: Double
    /// One value per repetition, in order.
    public var samples: [Double]

    /// Summarises one value per repetition.
    public init(samples: [Double]) {
        self.samples = samples
        median = Statistics.median(samples)
        min = samples.min() ?? 0
        max = samples.max() ?? 0
    }
}
