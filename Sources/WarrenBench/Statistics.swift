/// The order statistics the benchmark reports.
enum Statistics {
    /// The `fraction` quantile (0...1) of `values` by the nearest-rank method; 0 for no values.
    static func percentile(_ fraction: Double, of values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// The median: the mean of the two middle values for an even count; 0 for no values.
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
