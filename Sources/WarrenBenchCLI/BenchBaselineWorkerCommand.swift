import ArgumentParser
import WarrenBench
import WarrenCLI

/// `warren bench baseline-worker`: the benchmark's raw baseline worker, which `warren bench` starts as a process
/// of its own so that it is measured exactly as a Warren worker is. Hidden from help.
struct BenchBaselineWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baseline-worker",
        abstract: "The raw librabbitmq worker warren bench compares Warren with (started by warren bench).",
        shouldDisplay: false)

    @OptionGroup var broker: BrokerOptions

    @Option(name: .long, help: "The job queue to consume (it must exist).")
    var queue: String

    @Option(name: .customLong("result-queue"), help: "The queue results go to (it must exist).")
    var resultQueue: String

    @Option(name: .long, help: "Most unacknowledged deliveries.")
    var prefetch: Int = 10

    @Option(name: .long, help: "A Warren choice to copy; repeat for several.")
    var variant: [BaselineVariant] = []

    @Option(
        name: .customLong("results-stream"),
        help: "With --variant results-stream: the stream queue results are also appended to (it must exist).")
    var resultsStream: String?

    func validate() throws {
        guard (1...65_535).contains(prefetch) else { throw ValidationError("--prefetch must be in 1...65535") }
        let storesResults = variant.contains(.resultsStream)
        if storesResults, resultsStream == nil {
            throw ValidationError("--variant results-stream needs --results-stream QUEUE")
        }
        if !storesResults, let resultsStream {
            throw ValidationError("--results-stream \(resultsStream) needs --variant results-stream")
        }
    }

    func run() throws {
        DefaultSignals.restore()
        var configuration = BaselineWorker.Configuration(
            url: broker.brokerURL, queue: queue, resultQueue: resultQueue, prefetch: prefetch)
        configuration.variants = Set(variant)
        configuration.resultsStream = resultsStream
        try BaselineWorker(configuration: configuration).run()
    }
}

extension BaselineVariant: ExpressibleByArgument {}
