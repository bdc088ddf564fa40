import ArgumentParser
import Foundation
import Warren

/// `warren enqueue`: publishes one job, or a graph of jobs that depend on each other.
struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Publish a job (or a graph of jobs) and print its id; with --wait, print its result.",
        discussion: """
            Examples:
              warren enqueue sum --input '{"numbers":[1,2,3],"delayMs":200}'
              warren enqueue sum --input @numbers.json --key totals --supersede --wait
              warren enqueue echo --depends-on 3f0c… --require-success
              warren enqueue sleep --input '{"seconds":60}' --key report:42 --unique-for 10m
              warren enqueue --graph pipeline.json --wait
            A graph file is {"jobs": [{"name", "type", "input", "priority", "key", "queue", "dependsOn": [names or \
            earlier job ids], "requireSuccess", "maxAttempts", "deadline", "delay", "timeLimit", "uniqueFor"}]}; \
            it prints one "NAME ID" \
            line per job. A unique job whose key's lock another job holds is not enqueued: exit 6.
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: "The operation type, e.g. sum, sleep, echo, fail.")
    var type: String?

    @Option(name: .long, help: ArgumentHelp("Enqueue the jobs of a graph file instead.", valueName: "file.json"))
    var graph: String?

    @Option(name: .customLong("depends-on"), help: "Start only after this job ended (repeatable).")
    var dependsOn: [String] = []

    @Flag(name: .customLong("require-success"), help: "With --depends-on: end cancelled unless they all succeeded.")
    var requireSuccess = false

    @Flag(
        name: .customLong("unchecked-dependencies"),
        help: "With --depends-on or --graph: accept ids of jobs this producer did not enqueue (another host or client)."
    )
    var uncheckedDependencies = false

    @Option(
        name: .long,
        help: ArgumentHelp("The input: JSON text, or @FILE to read it from a file.", valueName: "json|@file"))
    var input: String?

    @Option(name: .long, help: "veryLow, low, normal, high or veryHigh (default normal).")
    var priority: JobPriority?

    @Option(name: .long, help: "Jobs of the same key compute the same thing; the newest sequence wins.")
    var key: String?

    @Flag(name: .long, help: "Cancel older jobs of --key (ListAdder's 'cancel the calculation in progress').")
    var supersede = false

    @Option(name: .long, help: "The broker queue; with --graph, that of the jobs that name none.")
    var queue: String = Topology.defaultQueue

    @Flag(
        name: .customLong("priority-queues"),
        help: "Create a missing broker queue as a priority queue, which delivers waiting jobs highest priority first.")
    var priorityQueues = false

    @Flag(
        name: .customLong("quorum-queues"),
        help: "Create a missing broker queue as a quorum queue, replicated on the nodes of a cluster (no priorities).")
    var quorumQueues = false

    // Unconditional: `--deadline -5` is a value to refuse with a reason, not a missing one.
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Do not start the job after this long from now (seconds, or 30s, 10m, 2h, 1d).", valueName: "time"))
    var deadline: TimeSpan?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Start the job no sooner than this long from now: seconds, or 30s, 10m, 2h, 1d.", valueName: "time"))
    var delay: TimeSpan?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Start the job no sooner than this instant (ISO 8601: 2026-11-24T09:00:00Z).", valueName: "date"))
    var at: Instant?

    @Option(
        name: .customLong("max-attempts"), parsing: .unconditional,
        help: "Runs at most this often when it fails with a retryable error (default 3).")
    var maxAttempts: Int?

    @Option(
        name: .customLong("time-limit"), parsing: .unconditional,
        help: ArgumentHelp(
            "Cancel the job if its code runs longer, and end it failed (timeLimit); a worker's limit for its type "
                + "applies too, the shorter counts.", valueName: "seconds|250ms|30s|10m|2h|1d"))
    var timeLimit: TimeSpan?

    @Option(
        name: .customLong("unique-for"), parsing: .unconditional,
        help: ArgumentHelp(
            "With --key: enqueue the job only if no other job of the key holds its lock (else exit 6), and hold it "
                + "until the job ends for good, or for at most this long.", valueName: "30s|10m|2h|1d"))
    var uniqueFor: TimeSpan?

    @Flag(
        name: .long,
        help: "Wait for the result, print it, and exit with 0, 3 (failed) or 4 (cancelled); shows progress on stderr.")
    var wait = false

    @Option(
        name: .customLong("reply-to"),
        help: ArgumentHelp(
            "Send the results and progress reports to this existing queue instead of the warren.results exchange.",
            valueName: "queue"))
    var replyTo: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "With --wait: give up after this many seconds (exit 5), from the job's time if scheduled (default: 60).")
    var timeout: Double?

    @Flag(name: .long, help: "Print JSON: the descriptor, and with --wait the result.")
    var json = false

    func validate() throws {
        if (type == nil) == (graph == nil) {
            throw ValidationError("name an operation type, or --graph FILE (not both)")
        }
        if let type, let problem = OperationDescriptor.problem(withType: type) { throw ValidationError(problem) }
        let setsJob =
            !dependsOn.isEmpty || supersede || key != nil || deadline != nil || delay != nil || at != nil
            || timeLimit != nil || uniqueFor != nil || requireSuccess || input != nil || priority != nil
            || maxAttempts != nil
        if graph != nil && setsJob {
            throw ValidationError("--graph takes each job's settings from the file")
        }
        if delay != nil && at != nil { throw ValidationError("give --delay or --at, not both") }
        if requireSuccess && dependsOn.isEmpty { throw ValidationError("--require-success needs --depends-on") }
        if uncheckedDependencies && dependsOn.isEmpty && graph == nil {
            throw ValidationError("--unchecked-dependencies needs --depends-on or --graph")
        }
        if key?.isEmpty == true { throw ValidationError("--key must not be empty") }
        if supersede && key == nil { throw ValidationError("--supersede needs --key") }
        if let uniqueFor {
            if key == nil { throw ValidationError("--unique-for needs --key: the lock is the key's") }
            if supersede { throw ValidationError("--unique-for and --supersede: give one or the other") }
            if let problem = UniqueLock.problem(withLifetime: uniqueFor.seconds)
                ?? OperationDescriptor.problem(withUniqueKey: key)
            {
                throw ValidationError("--unique-for: \(problem)")
            }
        }
        if let timeout, !(timeout > 0 && timeout <= 31_536_000) {
            throw ValidationError("--timeout must be a positive number of seconds, at most a year (31536000)")
        }
        if timeout != nil && !wait { throw ValidationError("--timeout goes with --wait") }
        if let deadline = deadline?.seconds, !(deadline > 0 && deadline.isFinite) {
            throw ValidationError("--deadline must be a positive number of seconds (a job past it never starts)")
        }
        if wait && replyTo != nil { throw ValidationError("--wait reads the results itself; leave out --reply-to") }
        if let maxAttempts, maxAttempts < 1 { throw ValidationError("--max-attempts must be at least 1") }
        if let timeLimit, let problem = OperationDescriptor.problem(withTimeLimit: timeLimit.seconds) {
            throw ValidationError("--time-limit: \(problem)")
        }
        if let problem = Topology.problem(creatingPriorityQueues: priorityQueues, quorumQueues: quorumQueues) {
            throw ValidationError("--priority-queues and --quorum-queues: \(problem)")
        }
    }

    func run() throws {
        var requests: [JobRequest]
        var names: [String: String] = [:]
        if let graph {
            do {
                (requests, names) = try GraphFile.load(graph).requests(defaultQueue: queue)
            } catch let error as GraphFileError {
                throw ValidationError(error.description)
            }
        } else {
            requests = [
                JobRequest(
                    type: type!, input: try parseInput(), priority: priority ?? .normal, key: key, supersede: supersede,
                    queue: queue, deadline: deadline.map { Date(timeIntervalSinceNow: $0.seconds) },
                    notBefore: at?.date ?? delay.map { Date(timeIntervalSinceNow: $0.seconds) },
                    maxAttempts: maxAttempts, timeLimit: timeLimit.map { .seconds($0.seconds) },
                    uniqueFor: uniqueFor.map { .seconds($0.seconds) }, dependencies: dependsOn,
                    requireSuccess: requireSuccess)
            ]
        }
        for index in requests.indices {
            requests[index].replyTo = replyTo
            requests[index].checksDependencies = !uncheckedDependencies
        }
        let producer = try Producer(url: broker.brokerURL, priorityQueues: priorityQueues, quorumQueues: quorumQueues)
        defer { producer.close() }
        let descriptors: [OperationDescriptor]
        let signals = InterruptSignals(interrupting: producer.interruption)
        do {
            defer { signals.restore() }
            descriptors = try producer.enqueue(requests, watch: wait)
        } catch let error as WarrenError where error.code == .interrupted {
            let shown = try printIDs(error.enqueuedJobIDs, names: names, confirmed: true)
            let ids = error.enqueuedJobIDs.isEmpty ? "" : " (their ids are \(shown))"
            StandardErrorLines.write("warren: \(Self.naming(error.message, names))\(ids)\n")
            throw signals.exitCode
        } catch let error as WarrenError where error.code == .invalidConfiguration {
            throw ValidationError(Self.naming(error.message, names))
        } catch let error as WarrenError where error.code == .duplicate {
            StandardErrorLines.write("warren: \(error.message)\n")
            throw ExitCode.duplicate
        } catch let error as WarrenError where !error.enqueuedJobIDs.isEmpty || !error.unconfirmedJobIDs.isEmpty {
            // Jobs the broker took beside refused ones, or may have taken (unconfirmed), are named as enqueued ones
            // are, so that whoever keeps the output can follow them, or take them back (warren cancel --ids-from).
            let confirmed = !error.enqueuedJobIDs.isEmpty
            let ids = confirmed ? error.enqueuedJobIDs : error.unconfirmedJobIDs
            let shown = try printIDs(ids, names: names, confirmed: confirmed)
            let which = confirmed ? "enqueued" : "unconfirmed"
            StandardErrorLines.write(
                "warren: \(Self.naming(error.message, names)) (the ids of the \(which) jobs are \(shown))\n")
            throw ExitCode.failure
        }
        let lines = try descriptors.map { descriptor in
            let shown = json ? try ResultPrinter.json(descriptor) : descriptor.id
            return names[descriptor.id].map { "\($0) \(shown)" } ?? shown
        }
        lines.forEach { print($0) }
        // A signal that came after the last job was sent: every one is enqueued, and nothing is awaited.
        if signals.received != nil {
            StandardErrorLines.write("warren: interrupted: all \(descriptors.count) jobs were enqueued\n")
        }
        do {
            try StandardStreams.checkOutput(lost: "the ids of the \(descriptors.count) enqueued job(s)", lines: lines)
        } catch  where signals.received != nil {
            throw signals.exitCode
        }
        warnOfPrioritiesOnPlainQueues(requests, producer)
        warnOfClassicQueues(requests, producer)
        warnOfManyDependencies(requests, names: names)
        warnOfOversizedJobs(descriptors, names: names)
        if signals.received != nil { throw signals.exitCode }
        guard wait else { return }
        // A scheduled job's wait starts at its time.
        let scheduled = max(descriptors.compactMap { $0.notBefore?.timeIntervalSinceNow }.max() ?? 0, 0)
        let deadline = ContinuousClock.now + .milliseconds(Int((scheduled + (timeout ?? 60)) * 1000))
        // Results print as they arrive: a job that failed at once is not held back by a slow one before it.
        var statuses: [JobStatus] = []
        var pending = Set(descriptors.map(\.id))
        let display = ProgressDisplay()
        defer { display.finish() }
        // Results stored from a little before the jobs went out: where they are read after a lost connection.
        let enqueuedAt = Date(timeIntervalSinceNow: -1)
        var stream: StoredResults?
        defer { stream?.close() }
        while !pending.isEmpty {
            let result: JobResult
            do {
                let left = max(deadline - ContinuousClock.now, .milliseconds(1))
                if let reading = stream {
                    result = try reading.first(of: pending, until: deadline)
                } else {
                    result = try producer.waitForFirstResult(of: pending, timeout: left, progress: display.show)
                }
            } catch let error as WarrenError where error.code == .broker && stream == nil {
                // The producer's reply queue went with its connection; every result is also stored in the stream.
                display.finish()
                StandardErrorLines.write(
                    "warren: lost the broker while waiting (\(error.message)); the jobs are enqueued: reading their "
                        + "results from the results stream\n")
                stream = StoredResults(url: broker.brokerURL, since: enqueuedAt)
                continue
            } catch let error as WarrenError where error.code == .timeout {
                display.finish()
                let missing = descriptors.map(\.id).filter(pending.contains).map { names[$0] ?? $0 }
                StandardErrorLines.write(
                    """
                    warren: no result for job\(missing.count == 1 ? "" : "s") \
                    \(missing.map(ResultPrinter.printable).joined(separator: ", ")) within \
                    \(String(format: "%g", timeout ?? 60)) s\(scheduled > 0 ? " of the jobs' time" : "")

                    """)
                // A job that failed says more than one that is late.
                throw statuses.contains(.failed) ? ExitCode.jobFailed : ExitCode.timedOut
            }
            pending.remove(result.jobID)
            display.finish()
            let shown = json ? try ResultPrinter.json(result) : ResultPrinter.line(result, verdict: .current)
            print(names[result.jobID].map { "\($0) \(shown)" } ?? shown)
            fflush(nil)
            statuses.append(result.status)
        }
        if statuses.contains(.failed) { throw ExitCode.jobFailed }
        if statuses.contains(.cancelled) { throw ExitCode.jobCancelled }
    }

    /// `message` with a graph's jobs by the names in its file, not the fresh ids they got: a cycle
    /// 'fetch' -> 'sum' -> 'fetch', the broker refused job 'report'.
    static func naming(_ message: String, _ names: [String: String]) -> String {
        names.reduce(message) { $0.replacingOccurrences(of: $1.key, with: "'\($1.value)'") }
    }

    /// Prints the ids of jobs a failed call enqueued (`confirmed`) or may have enqueued, as enqueued ones are
    /// printed, so that whoever keeps the output can follow them, or take them back (`warren cancel --ids-from`);
    /// on standard error when standard output cannot be written. Returns where they went, for the message.
    private func printIDs(_ ids: [String], names: [String: String], confirmed: Bool) throws -> String {
        let lines = try ids.map { id in
            let shown = json ? try ResultPrinter.json(["id": JSONValue.string(id), "confirmed": .bool(confirmed)]) : id
            return names[id].map { "\($0) \(shown)" } ?? shown
        }
        lines.forEach { print($0) }
        guard let problem = StandardStreams.outputProblem() else { return "on standard output" }
        StandardErrorLines.write(
            "warren: cannot write to standard output (\(problem)); the ids:\n" + lines.joined(separator: "\n") + "\n")
        return "above, on standard error"
    }

    /// Warns, on standard error, of jobs with a priority other than `normal` in a queue the broker does not deliver
    /// by priority: they keep their place in it, and their priority orders them only inside a worker. The jobs are
    /// enqueued already: a failure to find out warns of nothing rather than failing the command.
    private func warnOfPrioritiesOnPlainQueues(_ requests: [JobRequest], _ producer: Producer) {
        let queues = Set(requests.filter { $0.priority != .normal }.map(\.queue))
        for queue in queues.sorted() where (try? producer.deliversByPriority(queue)) == false {
            StandardErrorLines.write(
                "warren: warning: queue '\(queue)' is first in, first out: the broker delivers its jobs in the "
                    + "order they came, and a priority orders them only inside a worker; a queue created with "
                    + "--priority-queues is delivered highest priority first\n")
        }
    }

    /// Warns, on standard error, of job queues that are classic queues although `--quorum-queues` asked for quorum
    /// ones: they existed before. The jobs are enqueued already: a failure to find out warns of nothing.
    private func warnOfClassicQueues(_ requests: [JobRequest], _ producer: Producer) {
        guard quorumQueues else { return }
        for queue in Set(requests.map(\.queue)).sorted() where (try? producer.isClassicQueue(queue)) == true {
            StandardErrorLines.write(
                "warren: warning: queue '\(queue)' is a classic queue, on one node: it existed before, and "
                    + "--quorum-queues makes only the queues that do not exist quorum queues; delete it once empty to "
                    + "have it made again\n")
        }
    }

    /// Warns, on standard error, of jobs with more dependencies than a worker takes by default: one started without
    /// a higher --max-dependencies dead-letters them.
    private func warnOfManyDependencies(_ requests: [JobRequest], names: [String: String]) {
        let limit = Worker.Configuration(url: "").maxDependencies
        for request in requests {
            let count = request.dependencies.uniqued().count
            guard count > limit else { continue }
            let job = names[request.id].map { "'\($0)' (\(request.id))" } ?? request.id
            StandardErrorLines.write(
                "warren: warning: job \(job) has \(count) dependencies: a worker dead-letters it unless started "
                    + "with --max-dependencies \(count) or more (default \(limit))\n")
        }
    }

    /// Warns, on standard error, of jobs larger than a worker takes by default: one started without a higher
    /// --max-message-bytes dead-letters them (`oversized`), unread.
    private func warnOfOversizedJobs(_ descriptors: [OperationDescriptor], names: [String: String]) {
        let limit = Worker.Configuration(url: "").maxMessageBytes
        for descriptor in descriptors {
            guard let size = try? descriptor.encoded().count, size > limit else { continue }
            let job = names[descriptor.id].map { "'\($0)' (\(descriptor.id))" } ?? descriptor.id
            StandardErrorLines.write(
                "warren: warning: job \(job) is \(size) bytes: a worker dead-letters it unless started with "
                    + "--max-message-bytes \(size) or more (default \(limit))\n")
        }
    }

    private func parseInput() throws -> JSONValue {
        var text = input ?? "null"
        if text.hasPrefix("@") {
            let path = String(text.dropFirst())
            guard let contents = InputFile.contents(of: path) else {
                throw ValidationError("--input @\(path): cannot read the file")
            }
            guard let decoded = String(validating: contents, as: UTF8.self) else {
                throw ValidationError("--input @\(path): not valid UTF-8")
            }
            text = decoded
        }
        let bytes = Array(text.utf8)
        if let problem = InputNesting.problem(in: bytes, levelsAbove: 0) { throw ValidationError("--input \(problem)") }
        do {
            // Strict, as a worker reads a job's body: no trailing comma, which Foundation's parser takes.
            guard JSONText.trailingCommaOffset(in: bytes) == nil else { throw ValidationError("") }
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
            if let warning = InputNesting.warning(in: bytes, levelsAbove: 0) {
                StandardErrorLines.write("warren: warning: --input \(warning)\n")
            }
            return value
        } catch {
            throw ValidationError("--input is not valid JSON: \(text.prefix(80))")
        }
    }
}

extension JobPriority: ExpressibleByArgument {}

/// The results stream, read for `enqueue --wait` once its connection is lost: reconnecting, 100 ms doubling to 5 s
/// between attempts, and reading on after the last message it read.
///
/// Thread safety: confined to the thread that created it.
final class StoredResults {
    private let url: String
    private var start: ResultReader.Start
    private var reader: ResultReader?

    init(url: String, since: Date) {
        self.url = url
        start = .since(since)
    }

    /// The first result stored for one of `jobIDs`.
    /// - Throws: ``WarrenError`` (`timeout`) when none came by `deadline`; (`broker`) when the broker could not be
    ///   reached again by then, with its last refusal (a user deleted meanwhile, say).
    func first(of jobIDs: Set<String>, until deadline: ContinuousClock.Instant) throws -> JobResult {
        var delay = Duration.milliseconds(100)
        var unreachable: WarrenError?
        while ContinuousClock.now < deadline {
            do {
                let reading = try reader ?? ResultReader(url: url, from: start)
                reader = reading
                unreachable = nil
                guard let event = try reading.next(waitingUpTo: min(deadline - ContinuousClock.now, .seconds(1)))
                else { continue }
                guard case .result(let stored, let offset) = event else { continue }
                if let offset { start = .offset(offset) }
                if case .success(let result) = stored, jobIDs.contains(result.jobID) { return result }
            } catch let error as WarrenError where error.code == .broker {
                reader?.close()
                reader = nil
                // A permission missing (read on warren.results) stays missing until the deadline.
                if error.isAccessRefused {
                    throw WarrenError(.broker, "cannot read the results stream: \(error.message)")
                }
                unreachable = error
                Thread.sleep(forTimeInterval: min(delay, max(deadline - ContinuousClock.now, .zero)) / .seconds(1))
                delay = min(delay * 2, .seconds(5))
            }
        }
        if let unreachable {
            throw WarrenError(.broker, "cannot read the results stream: \(unreachable.message)")
        }
        throw WarrenError(.timeout, "no result by the deadline")
    }

    func close() {
        reader?.close()
    }
}
