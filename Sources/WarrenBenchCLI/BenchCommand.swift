import ArgumentParser
import Foundation
import WarrenBench
import WarrenCLI

/// `warren bench`: Warren beside two raw librabbitmq baselines, against a broker of its own.
package struct BenchCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Warren beside raw librabbitmq baselines doing the same jobs; print a table.",
        // Without it, the hidden baseline worker would make the usage line end in <subcommand>.
        usage: "warren bench [<options>]",
        discussion: """
            Three sides run the same job pattern against the broker at --url, each worker in a process of its own: \
            a persistent job published with confirms, consumed with manual ack and prefetch, a persistent result \
            published with confirms, then the ack. The sides: the plain raw client, the limit of the wire pattern; \
            the design's floor, the raw client that also hands each job to an OperationQueue and appends its \
            result to a stream in batches, as Warren does; and Warren. Measured: throughput at prefetch (and width) 1, 10 and 100, with \
            producer and worker at once and draining a pre-filled queue; round-trip latency one job at a time; \
            cancellation latency of an executing job; worker CPU per 1,000 jobs and memory. Use a broker of its \
            own and a release build (swift build -c release), on an otherwise idle machine. Queues are unique to \
            the run and deleted after it. Every side's results go to a durable result queue: Warren's jobs name it \
            as their reply queue, as a producer waiting for its results names its own; Warren also stores every \
            result in the warren.results stream, as in production.
            Example:
              warren bench --url "$(scripts/broker start /tmp/bench-broker)" --json bench.json
            """,
        subcommands: [BenchBaselineWorkerCommand.self])

    @OptionGroup var broker: BrokerOptions

    @Option(
        name: .long, help: "Repetitions of the whole set (default: 3; quick: 1); the table shows medians and min–max.")
    var repetitions: Int?

    @Flag(name: .long, help: "A run of well under a minute with few jobs: checks that everything works.")
    var quick = false

    @Option(name: .long, help: "Jobs per throughput measurement at prefetch 10 and 100 (default: 10000; quick: 1000).")
    var jobs: Int?

    @Option(
        name: .customLong("jobs-at-prefetch-1"),
        help: "Jobs per throughput measurement at prefetch 1 (default: 2000; quick: 200).")
    var jobsAtPrefetchOne: Int?

    @Option(
        name: .customLong("latency-samples"), help: "Round trips timed one job at a time (default: 1000; quick: 100).")
    var latencySamples: Int?

    @Option(name: .long, help: "Cancellations timed (default: 100; quick: 10).")
    var cancellations: Int?

    @Option(
        name: .customLong("soak-jobs"), help: "Jobs for worker CPU and memory growth (default: 100000; quick: 4000).")
    var soakJobs: Int?

    @Option(name: .long, help: "Jobs published before waiting for their confirms (default: 100).")
    var batch: Int?

    @Option(
        name: .customLong("baseline-with"),
        help: ArgumentHelp(
            "Diagnostics: the plain raw client copies this Warren choice (priority-queue, results-exchange, single-acks, operation-queue, results-stream).",
            visibility: .hidden))
    var baselineVariants: [BaselineVariant] = []

    @Flag(
        name: .customLong("no-floor"),
        help: "Leave out the design's floor, for a quicker run; figures held to it then show no target.")
    var noFloor = false

    @Option(name: .long, help: ArgumentHelp("Also write the report as JSON to this file.", valueName: "path"))
    var json: String?

    @Option(
        name: .customLong("worker-executable"),
        help: ArgumentHelp("The warren executable that runs the workers (default: this one).", valueName: "path"))
    var workerExecutable: String?

    // Unconditional: `--broker-pid -5` is a value to refuse with a reason, not a missing one.
    @Option(
        name: .customLong("broker-pid"), parsing: .unconditional,
        help: "The broker's process id (a wrapper's is fine): also report the broker's CPU per 1,000 jobs.")
    var brokerPID: Int32?

    package init() {}

    package func validate() throws {
        for (name, value) in [
            ("--repetitions", repetitions), ("--jobs", jobs), ("--jobs-at-prefetch-1", jobsAtPrefetchOne),
            ("--latency-samples", latencySamples), ("--cancellations", cancellations), ("--soak-jobs", soakJobs),
            ("--batch", batch),
        ] {
            if let value, value < 1 { throw ValidationError("\(name) must be at least 1") }
        }
        if let workerExecutable, !FileManager.default.isExecutableFile(atPath: workerExecutable) {
            throw ValidationError("--worker-executable \(workerExecutable): not an executable file")
        }
        // Both are used only at the end of a run that may take half an hour: a mistake shows now.
        if let brokerPID, !Self.isProcess(brokerPID) {
            throw ValidationError("--broker-pid \(brokerPID): no such process")
        }
        if let json, let problem = Self.problemWriting(json) {
            throw ValidationError("--json \(json): \(problem)")
        }
    }

    /// Whether `pid` is a process (not one of its threads, which have entries in /proc too): its status names it
    /// as its own thread group.
    static func isProcess(_ pid: Int32) -> Bool {
        guard pid >= 1, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            return false
        }
        return status.split(separator: "\n").contains { $0.split(separator: "\t") == ["Tgid:", "\(pid)"] }
    }

    /// Why the report could not be written to `path`, or `nil` if it can: an empty path, a directory that is missing
    /// or not writable, or a path that is a directory or a file not writable (symbolic links followed).
    static func problemWriting(_ path: String) -> String? {
        if path.isEmpty { return "no file named" }
        if path.hasSuffix("/") { return "names a directory" }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { return "is a directory" }
            return access(path, W_OK) == 0 ? nil : String(cString: strerror(errno))
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return access(directory, W_OK) == 0 ? nil : "\(directory): \(String(cString: strerror(errno)))"
    }

    package func run() throws {
        DefaultSignals.restore()
        var options = quick ? Benchmark.Options.quick : Benchmark.Options.full
        if let repetitions { options.repetitions = repetitions }
        if let jobs { options.jobs = jobs }
        if let jobsAtPrefetchOne { options.jobsAtPrefetchOne = jobsAtPrefetchOne }
        if let latencySamples { options.latencySamples = latencySamples }
        if let cancellations { options.cancellations = cancellations }
        if let soakJobs { options.soakJobs = soakJobs }
        if let batch { options.batch = batch }
        options.baselineVariants = Set(baselineVariants)
        options.measuresFloor = !noFloor
        var configuration = Benchmark.Configuration(url: broker.brokerURL)
        if let workerExecutable { configuration.workerExecutable = workerExecutable }
        configuration.brokerPID = brokerPID
        let report: BenchReport
        do {
            let benchmark = try Benchmark(configuration: configuration, options: options)
            report = try benchmark.run { line in
                StandardErrorLines.write("\(line)\n")
            }
        } catch let error as BenchError {
            StandardErrorLines.write("warren: \(error.message)\n")
            throw ExitCode.failure
        }
        print(report.table())
        if let json {
            do {
                try report.json().write(to: URL(fileURLWithPath: json))
            } catch {
                let reason = Self.problemWriting(json) ?? error.localizedDescription
                StandardErrorLines.write("warren: cannot write the report to \(json): \(reason)\n")
                throw ExitCode.failure
            }
        }
    }
}
