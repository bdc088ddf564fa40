import ArgumentParser
import Foundation
import Warren

/// `warren status`: every live worker, what it holds and what it has done.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show every live worker (local queues, totals), then the job queues and dead letters in the broker.",
        discussion: """
            After the workers, one line per broker queue: jobs waiting for a worker, jobs in its delay queues \
            (retries, jobs waiting for dependencies elsewhere) and consumers; then the dead letters.
            """)

    @OptionGroup var broker: BrokerOptions

    @Option(name: .long, help: "Seconds to wait for workers to answer.")
    var timeout: Double = 2

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also show this broker queue (repeatable); always shown: the queues live workers take jobs from, and "
                + "\(Topology.defaultQueue).",
            valueName: "name"))
    var queue: [String] = []

    @Flag(
        name: .long,
        help: "Also list the jobs each worker holds: executing ones (longest running first), then waiting ones.")
    var jobs = false

    @Option(
        name: .customLong("jobs-limit"), help: "List at most this many jobs per worker (implies --jobs; default: 100).")
    var jobsLimit: Int?

    @Flag(name: .long, help: "Print one JSON object per line: each worker, each queue, then the dead letters.")
    var json = false

    func validate() throws {
        if !(0...3600).contains(timeout) {
            throw ValidationError("--timeout \(timeout): expected seconds from 0 to 3600")
        }
        if let jobsLimit, !(1...100_000).contains(jobsLimit) {
            throw ValidationError("--jobs-limit \(jobsLimit): expected 1 to 100000")
        }
        try QueueArgument.validate(queue)
    }

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        // The workers are asked on a connection of their own: a broker under a memory or disk alarm blocks a
        // connection that publishes, and the queues are still worth showing then.
        var statuses: [WorkerStatus] = []
        var workersUnknown: WarrenError?
        do {
            let asking = try Producer(url: broker.brokerURL)
            defer { asking.close() }
            statuses = try asking.workerStatuses(
                timeout: .milliseconds(Int(timeout * 1000)), jobs: jobs || jobsLimit != nil ? jobsLimit ?? 100 : nil)
        } catch let error as WarrenError where error.code == .timeout {
            workersUnknown = error
        }
        // Names a reply lists are another process's word: one that no queue can have (over 255 bytes) is not looked
        // up, which the broker would answer by closing the connection.
        let asked = Set(queue + statuses.flatMap(\.queues).filter { !$0.isEmpty && $0.utf8.count <= 255 })
        // warren.default too, consumed or not (a backlog nobody takes is what to see), unless it does not exist and
        // other queues are shown.
        let queues = try asked.union([Topology.defaultQueue]).sorted().map { name in
            (name, try Self.reachable { try producer.jobQueueStatus(name) })
        }.filter { name, status in
            if name == Topology.defaultQueue, !asked.isEmpty, !asked.contains(name), case .success(nil) = status {
                return false
            }
            return true
        }
        let deadLetters = try Self.reachable { try producer.deadLetterCount() }
        defer {
            fflush(nil)
            for warning in Self.sharedIDs(statuses) { StandardErrorLines.write("warren: \(warning)\n") }
            if let workersUnknown {
                StandardErrorLines.write("warren: workers unknown: \(workersUnknown.message)\n")
            }
        }
        if json {
            if let workersUnknown { print(try ResultPrinter.json(["workersUnknown": workersUnknown.message])) }
            for status in statuses { print(try ResultPrinter.json(status)) }
            for (name, status) in queues {
                switch status {
                case .success(let status?): print(try ResultPrinter.json(status))
                case .success(nil): print(try ResultPrinter.json(["queue": JSONValue.string(name), "exists": false]))
                case .failure(let error): print(try ResultPrinter.json(["queue": name, "unreachable": error.message]))
                }
            }
            switch deadLetters {
            case .success(let count?): print(try ResultPrinter.json(["deadLetters": count]))
            case .success(nil): print(try ResultPrinter.json(["deadLettersMissing": Self.noDeadLetterQueue]))
            case .failure(let error): print(try ResultPrinter.json(["deadLettersUnreachable": error.message]))
            }
            if workersUnknown != nil { throw ExitCode.failure }
            return
        }
        if workersUnknown != nil {
            print("workers unknown: the broker did not take the status request (see below)")
        } else if statuses.isEmpty {
            print("no live workers answered within \(timeout) s")
        }
        for status in statuses { Self.printWorker(status) }
        for (name, status) in queues {
            switch status {
            case .success(let status?):
                print(
                    "queue \(ResultPrinter.printable(name)) waiting=\(status.waiting) delayed=\(status.delayed) consumers=\(status.consumers)"
                )
            case .success(nil): print("queue \(ResultPrinter.printable(name)): no such queue")
            case .failure(let error):
                print("queue \(ResultPrinter.printable(name)): unreachable: \(ResultPrinter.printable(error.message))")
            }
        }
        switch deadLetters {
        case .success(let count?): print("dead letters=\(count)\(count > 0 ? " (warren dead list)" : "")")
        case .success(nil): print("dead letters: \(Self.noDeadLetterQueue)")
        case .failure(let error): print("dead letters: unreachable: \(error.message)")
        }
        if workersUnknown != nil { throw ExitCode.failure }
    }

    /// What status says when the dead-letter queue does not exist.
    static let noDeadLetterQueue =
        "no queue \(Topology.deadQueue): no worker has connected here yet, or it was deleted "
        + "(a worker makes it as it connects)"

    /// A warning for each worker id that more than one live worker answers as: each lists its own jobs, but
    /// commands for that id reach them all.
    static func sharedIDs(_ statuses: [WorkerStatus]) -> [String] {
        Dictionary(grouping: statuses, by: \.workerID).filter { $0.value.count > 1 }.sorted { $0.key < $1.key }
            .map { id, sharing in
                let places = sharing.map { "\(ResultPrinter.printable($0.host)) pid \($0.pid)" }.joined(separator: ", ")
                return """
                    \(sharing.count) live workers answer as \(ResultPrinter.printable(id)) (\(places)): give each a \
                    --worker-id of its own; pause, resume and resize --worker \(ResultPrinter.printable(id)) reach all \
                    of them
                    """
            }
    }

    /// What `body` finds, or why the queue it looks at is out of reach (on a cluster node that is down); any other
    /// failure goes up.
    private static func reachable<T>(_ body: () throws -> T) throws -> Result<T, WarrenError> {
        do {
            return .success(try body())
        } catch let error as WarrenError where error.code == .queueUnreachable {
            return .failure(error)
        }
    }

    private static func printWorker(_ status: WorkerStatus) {
        // A status reply is any client's to send: what it names prints escaped.
        let printable = ResultPrinter.printable
        let paused =
            status.pausedQueues.isEmpty ? "" : " paused=\(printable(status.pausedQueues.joined(separator: ",")))"
        print(
            "\(printable(status.workerID)) host=\(printable(status.host)) pid=\(status.pid) "
                + "up=\(duration(status.uptimeSeconds)) queues=\(printable(status.queues.joined(separator: ",")))"
                + "\(paused) prefetch=\(status.prefetch)"
                + (status.recycling.map { " recycling=\(ResultPrinter.printable($0))" } ?? "")
                + (status.stopping == true ? " stopping" : ""))
        for local in status.localQueues {
            print(
                "  local \(printable(local.name)) width=\(local.width) executing=\(local.executing) "
                    + "waiting=\(local.waiting)")
        }
        let totals = JobStatus.allCases.map { "\($0.rawValue)=\(status.totals[$0.rawValue] ?? 0)" }
        print("  totals \(totals.joined(separator: " "))")
        for job in status.jobs ?? [] { print("  " + jobLine(job)) }
        if let more = status.moreJobs, more > 0 { print("  … and \(more) more jobs") }
    }

    /// `job ID type=T executing for 12s attempt=1 priority=normal queue=Q local=L progress=42% MESSAGE`, with the
    /// key (and `unique` for a job that holds its lock), the time limit and a cancellation the job has not acted on
    /// yet when there are.
    static func jobLine(_ job: WorkerStatus.Job) -> String {
        let printable = ResultPrinter.printable
        var line = "job \(printable(job.id)) type=\(printable(job.type)) \(job.state.rawValue) for "
        line += duration(job.executingSeconds ?? job.heldSeconds)
        line += " attempt=\(job.attempt) priority=\(job.priority.rawValue) queue=\(printable(job.queue))"
        line += " local=\(printable(job.localQueue))"
        if let key = job.key { line += " key=\(ResultPrinter.printable(key)) seq=\(job.sequence)" }
        if job.unique == true { line += " unique" }
        if let limit = job.timeLimitSeconds { line += " time-limit=\(timeLimit(limit))" }
        if let cancelled = job.cancelled { line += " cancelled=\(printable(cancelled))" }
        if let waitingOn = job.waitingOn, !waitingOn.isEmpty {
            line += " waiting-on=\(printable(waitingOn.prefix(3).joined(separator: ",")))"
            if waitingOn.count > 3 { line += ",…" }
        }
        if let progress = job.progress {
            line += " progress=\(ResultPrinter.percent(progress))"
            if let message = job.progressMessage { line += " \(ResultPrinter.printable(message))" }
        }
        return line
    }

    /// A time limit as `warren worker --time-limit` takes it: `250ms`, `1.5s`, `30s`, `10m`, `2h`, `1d`, `90m`.
    private static let aYear = 31_536_000.0
    private static let aHundredYears = 3_153_600_000.0

    static func timeLimit(_ seconds: Double) -> String {
        // A reply is another process's word: a value no Int holds (1e300, NaN) prints as a year, not a trap.
        guard seconds.isFinite, (0...Self.aYear).contains(seconds) else { return seconds > 0 ? ">1y" : "?" }
        let milliseconds = Int((seconds * 1000).rounded())
        if milliseconds < 1000 { return "\(milliseconds)ms" }
        guard milliseconds % 1000 == 0 else { return "\(Double(milliseconds) / 1000)s" }
        let whole = milliseconds / 1000
        for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] where whole % size == 0 {
            return "\(whole / size)\(unit)"
        }
        return "\(whole)s"
    }

    /// `2.5s` (under 10 s), `42s`, `3m12s`, `2h5m`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds <= Self.aHundredYears else { return seconds > 0 ? ">100y" : "?" }
        if seconds < 10 { return "\((seconds * 10).rounded(.down) / 10)s" }
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m\(total % 60)s" }
        return "\(total / 3600)h\(total % 3600 / 60)m"
    }
}
