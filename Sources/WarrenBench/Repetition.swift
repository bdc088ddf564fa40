import AMQP
import Foundation

/// One repetition of the benchmark: every side through every scenario, with connections and queues of its own.
///
/// Thread safety: confined to the thread that runs the benchmark.
final class Repetition {
    let number: Int
    let benchmark: Benchmark
    let admin: BrokerAdmin
    /// The order of the sides in each scenario: rotates between repetitions, so that drift favours none.
    let order: [SideKind]
    /// Unique per run and repetition; every queue name and job id starts with it.
    let prefix: String
    let logDirectory: URL
    private let stateDirectory: URL
    /// What this repetition measured, by side and figure key.
    var figures: [SideKind: [String: Double]] = [:]
    /// Cancellation samples thrown away because the job had not started when the cancellation was sent.
    var discardedCancellations = 0
    private var peakResident: [SideKind: Int] = [:]
    private var scenarios = 0

    var options: Benchmark.Options { benchmark.options }
    var broker: AMQPConfiguration { benchmark.broker }

    init(number: Int, runID: String, benchmark: Benchmark, directory: URL) throws {
        self.number = number
        self.benchmark = benchmark
        prefix = "bench-\(runID)-r\(number)"
        logDirectory = directory
        order = benchmark.options.sides(inRepetition: number)
        admin = try BrokerAdmin(broker: benchmark.broker)
        stateDirectory = directory.appendingPathComponent("state-\(number)")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
    }

    /// Connects a side afresh for each scenario: a connection left idle while the other side runs a long scenario
    /// would miss its heartbeats (librabbitmq answers them only inside a call) and be closed by the broker.
    private func makeSide(_ kind: SideKind, scenario: Int) throws -> any BenchSide {
        switch kind {
        case .baseline, .floor:
            return try BaselineSide(
                kind: kind, url: benchmark.configuration.url, broker: broker, admin: admin,
                resultQueue: "\(prefix)-\(kind.rawValue)-results\(scenario)", window: options.batch,
                variants: kind == .floor ? [.operationQueue, .resultsStream] : options.baselineVariants)
        case .warren:
            return try WarrenSide(
                url: benchmark.configuration.url, batch: options.batch, stateDirectory: stateDirectory, admin: admin,
                resultQueue: "\(prefix)-warren-results\(scenario)")
        }
    }

    func run(progress: (String) -> Void) throws {
        for prefetch in options.prefetches {
            try measure(progress) { try concurrentThroughput(of: $0, prefetch: prefetch) }
            try measure(progress) { try drainThroughput(of: $0, prefetch: prefetch) }
        }
        try measure(progress) { try latency(of: $0) }
        try measure(progress) { try soak(of: $0) }
        for side in order {
            figures[side, default: [:]][FigureCatalog.workerPeakRSS] = Double(peakResident[side] ?? 0) / 1_048_576
        }
    }

    /// Runs `scenario` for each side in this repetition's order and reports what it measured.
    private func measure(_ progress: (String) -> Void, _ scenario: (any BenchSide) throws -> [String: Double]) throws {
        var lines: [String] = []
        scenarios += 1
        for kind in order {
            let side = try makeSide(kind, scenario: scenarios)
            defer { side.close() }
            let measured = try scenario(side)
            figures[kind, default: [:]].merge(measured) { $1 }
            lines.append(
                "\(kind.rawValue) "
                    + measured.sorted { $0.key < $1.key }.map {
                        "\($0.key)=\(FigureCatalog.format($0.value, key: $0.key))"
                    }.joined(separator: " "))
        }
        for line in lines { progress("  " + line) }
    }

    /// A name unique to this repetition, side and scenario, for queues and job-id prefixes.
    func name(_ side: any BenchSide, _ scenario: String) -> String {
        "\(prefix)-\(side.kind.rawValue)-\(scenario)"
    }

    /// Starts `side`'s worker on a fresh queue `queue`, waits until it consumes, runs `body`, then records the
    /// worker's peak memory, stops it and deletes the queue.
    func withWorker<T>(
        _ side: any BenchSide, queue: String, prefetch: Int, declared: Bool = false,
        _ body: (WorkerProcess) throws -> T
    ) throws -> T {
        if !declared { try side.declare(queue, admin: admin) }
        let worker = try WorkerProcess(
            executable: benchmark.configuration.workerExecutable,
            arguments: side.workerArguments(queue: queue, prefetch: prefetch),
            name: "\(side.kind.rawValue) worker on \(queue)", logDirectory: logDirectory)
        defer {
            worker.stop()
            try? admin.delete(queue)
        }
        try worker.waitUntil { try admin.consumers(of: queue) > 0 }
        let value = try body(worker)
        let peak = try worker.snapshot().peakResidentBytes
        peakResident[side.kind] = max(peakResident[side.kind] ?? 0, peak)
        return value
    }

    /// Publishes jobs `ids` through `side` while a collector reads their results; returns when publishing started
    /// and when the results arrived.
    func runJobs(
        _ side: any BenchSide, ids: [String], queue: String, idPrefix: String
    ) throws -> (start: ContinuousClock.Instant, span: ResultCollector.Span) {
        let collector = try ResultCollector(
            broker: broker, source: side.resultSource, prefix: idPrefix, expected: ids.count)
        let start = ContinuousClock.now
        do {
            try side.publish(ids, to: queue)
        } catch {
            collector.stop()
            throw error
        }
        return (start, try collector.waitForAll(timeout: Self.timeout(forJobs: ids.count)))
    }

    /// How long `count` jobs may take before the benchmark gives up: generous, for debug builds.
    static func timeout(forJobs count: Int) -> Duration {
        .seconds(60) + .milliseconds(count * 20)
    }

    func close() {
        admin.close()
    }
}
