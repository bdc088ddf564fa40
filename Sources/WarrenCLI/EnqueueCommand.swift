import ArgumentParser
import Foundation
import Warren

/// `warren enqueue`: publishes one job.
struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Publish a job and print its id; with --wait, print its result.",
        discussion: """
            Examples:
              warren enqueue sum --input '{"numbers":[1,2,3],"delayMs":200}'
              warren enqueue sum --input @numbers.json --key totals --supersede --wait
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: "The operation type, e.g. sum, sleep, echo, fail.")
    var type: String

    @Option(name: .long, help: ArgumentHelp("The input: JSON text, or @FILE to read it from a file.", valueName: "json|@file"))
    var input: String = "null"

    @Option(name: .long, help: "veryLow, low, normal, high or veryHigh.")
    var priority: JobPriority = .normal

    @Option(name: .long, help: "Jobs of the same key compute the same thing; the newest sequence wins.")
    var key: String?

    @Flag(name: .long, help: "Cancel older jobs of --key (ListAdder's 'cancel the calculation in progress').")
    var supersede = false

    @Option(name: .long, help: "The broker queue.")
    var queue: String = Topology.defaultQueue

    @Option(name: .long, help: "Do not start the job after this many seconds from now.")
    var deadline: Double?

    @Option(name: .customLong("max-attempts"), help: "Runs at most this often when it fails with a retryable error (default 3).")
    var maxAttempts: Int?

    @Flag(
        name: .long,
        help: "Wait for the result, print it, and exit with 0, 3 (failed) or 4 (cancelled); shows progress on stderr.")
    var wait = false

    @Option(name: .long, help: "With --wait: give up after this many seconds (exit 5).")
    var timeout: Double = 60

    @Flag(name: .long, help: "Print JSON: the descriptor, and with --wait the result.")
    var json = false

    func validate() throws {
        if supersede && key == nil { throw ValidationError("--supersede needs --key") }
        if timeout <= 0 { throw ValidationError("--timeout must be positive") }
        if let maxAttempts, maxAttempts < 1 { throw ValidationError("--max-attempts must be at least 1") }
    }

    func run() throws {
        let request = JobRequest(
            type: type, input: try parseInput(), priority: priority, key: key, supersede: supersede, queue: queue,
            deadline: deadline.map { Date(timeIntervalSinceNow: $0) }, maxAttempts: maxAttempts)
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        let descriptor = try producer.enqueue(request, watch: wait)
        print(json ? try ResultPrinter.json(descriptor) : descriptor.id)
        fflush(nil)
        guard wait else { return }
        let result: JobResult
        do {
            let display = ProgressDisplay()
            defer { display.finish() }
            result = try producer.waitForResult(
                of: descriptor.id, timeout: .milliseconds(Int(timeout * 1000)), progress: display.show)
        } catch let error as WarrenError where error.code == .timeout {
            FileHandle.standardError.write(Data("warren: \(error.message)\n".utf8))
            throw ExitCode.timedOut
        }
        print(json ? try ResultPrinter.json(result) : ResultPrinter.line(result, verdict: .current))
        switch result.status {
        case .succeeded: return
        case .failed: throw ExitCode.jobFailed
        case .cancelled: throw ExitCode.jobCancelled
        }
    }

    private func parseInput() throws -> JSONValue {
        var text = input
        if text.hasPrefix("@") {
            let path = String(text.dropFirst())
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--input @\(path): cannot read the file")
            }
            text = String(decoding: contents, as: UTF8.self)
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            throw ValidationError("--input is not valid JSON: \(text.prefix(80))")
        }
    }
}

extension JobPriority: ExpressibleByArgument {}
