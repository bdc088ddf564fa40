import Foundation

/// What a benchmark run measured: every figure for Warren, the raw client and the floor, and how the run was made.
public struct BenchReport: Sendable, Codable {
    /// The machine the run measured.
    public struct Host: Sendable, Codable {
        /// Cores available to the processes.
        public var cores: Int
        /// Whether a Swift compiler ran at some point during the run: figures are then noisy.
        public var compilerRunning: Bool
        /// The executable that ran the workers.
        public var workerExecutable: String
    }

    /// The format of this report; 1.
    public var version = 1
    /// When the run started.
    public var date: Date
    /// The broker, password redacted.
    public var broker: String
    /// What was measured, and how much.
    public var options: Benchmark.Options
    public var host: Host
    /// Cancellations not timed because their job had not started yet.
    public var discardedCancellations: Int
    /// The figures, in report order.
    public var figures: [BenchFigure]

    /// The keys every report has, for checking a report's completeness.
    public static func requiredKeys(prefetches: [Int] = Benchmark.Options().prefetches) -> [String] {
        FigureCatalog.requiredKeys(prefetches: prefetches)
    }

    /// The report as JSON (sorted keys, ISO 8601 dates).
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}
