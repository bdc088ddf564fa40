import AMQP
import Foundation

/// Measures Warren beside two raw librabbitmq baselines on the same job pattern, in one run against one broker.
///
/// The baselines are the plain raw client, the limit of the wire pattern itself, and the design's floor: the raw
/// client that also makes Warren's hop to an operation queue and stores results in a stream as Warren does
/// (``SideKind``). Each repetition measures every side, scenario by scenario (rotating the order), with each worker
/// in a process of its own: end-to-end throughput at several prefetch settings (producer and worker at once, and
/// draining a pre-filled queue), round-trip latency one job at a time, cancellation latency of an executing job
/// (Warren), and the worker's CPU time and memory over a long run.
///
/// ```swift
/// let report = try Benchmark(configuration: .init(url: url), options: .quick).run { print($0) }
/// print(report.table())
/// ```
///
/// Thread safety: confined; ``run(progress:)`` uses the calling thread and threads of its own.
public final class Benchmark {
    /// How to reach the broker and the workers.
    public struct Configuration: Sendable {
        /// Broker URL, `amqp://user:password@host:port/vhost`. Use a broker of its own: the benchmark loads it.
        public var url: String
        /// The `warren` executable that runs workers (`warren worker`, `warren bench baseline-worker`).
        /// Default: the running executable.
        public var workerExecutable: String = Benchmark.currentExecutable
        /// With the broker's process id (a wrapper script's is fine), also report the broker's CPU time per
        /// 1,000 jobs. Default: `nil`, not reported.
        public var brokerPID: Int32?

        /// Workers started from the running executable, on the broker at `url`.
        public init(url: String) {
            self.url = url
        }
    }

    /// The running executable (`/proc/self/exe`).
    public static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// How to reach the broker and the workers.
    public let configuration: Configuration
    /// How much to measure.
    public let options: Options
    let broker: AMQPConfiguration

    /// Checks the URL and the options.
    /// - Throws: ``BenchError`` for a bad URL or options out of range.
    public init(configuration: Configuration, options: Options) throws {
        self.configuration = configuration
        self.options = options
        do {
            broker = try AMQPConfiguration(url: configuration.url)
        } catch let error as AMQPError {
            throw BenchError(error.message)
        }
        try options.validate()
    }

    /// Runs every repetition and returns the report.
    /// - Parameter progress: Called with a line for each measurement as it completes.
    /// - Throws: ``BenchError`` (or the broker's error) when a scenario cannot complete.
    public func run(progress: (String) -> Void) throws -> BenchReport {
        let runID = String(UUID().uuidString.prefix(8).lowercased())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("warren-bench-\(runID)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let started = Date()
        var samples: [SideKind: [String: [Double]]] = [:]
        let noise = NoiseMonitor()
        var discarded = 0
        defer { _ = noise.stop() }
        for number in 1...options.repetitions {
            progress("repetition \(number) of \(options.repetitions)")
            let repetition = try Repetition(number: number, runID: runID, benchmark: self, directory: directory)
            defer { repetition.close() }
            try repetition.run(progress: progress)
            for (side, figures) in repetition.figures {
                for (key, value) in figures { samples[side, default: [:]][key, default: []].append(value) }
            }
            discarded += repetition.discardedCancellations
        }
        let compilerSeen = noise.stop()
        try? FileManager.default.removeItem(at: directory)
        return BenchReport(
            date: started, broker: broker.redactedURL, options: options,
            host: BenchReport.Host(
                cores: ProcessInfo.processInfo.activeProcessorCount, compilerRunning: compilerSeen,
                workerExecutable: configuration.workerExecutable),
            discardedCancellations: discarded,
            figures: FigureCatalog.figures(from: samples, prefetches: options.prefetches))
    }
}
