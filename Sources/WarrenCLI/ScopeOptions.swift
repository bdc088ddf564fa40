import ArgumentParser
import Foundation
import Warren

/// Which workers and queues `pause` and `resume` apply to.
struct ScopeOptions: ParsableArguments {
    @Option(name: .long, help: "Only this worker (its --worker-id); default: every worker.")
    var worker: String?

    @Option(name: .long, help: "Only this broker queue; default: every queue.")
    var queue: String?

    @Option(name: .long, help: "With --worker: seconds to wait for that worker to report that it lives.")
    var timeout: Double = 2

    func validate() throws {
        try QueueArgument.validate(queue.map { [$0] } ?? [])
        if !(0...3600).contains(timeout) {
            throw ValidationError("--timeout \(timeout): expected seconds from 0 to 3600")
        }
    }

    var description: String {
        "\(worker.map { "worker \(ResultPrinter.printable($0))" } ?? "every worker"), "
            + "\(queue.map { "queue \($0)" } ?? "every queue")"
    }

    /// With ``queue`` and no ``worker``: exits 1, sending nothing, when the broker has no such queue, which no
    /// worker can be consuming: a mistyped name would otherwise look obeyed.
    func checkQueueExists(_ producer: Producer) throws {
        guard worker == nil, let queue, try producer.jobQueueStatus(queue) == nil else { return }
        StandardErrorLines.write(
            "warren: the broker has no queue \(ResultPrinter.printable(queue)), so no worker consumes it\n")
        throw ExitCode.failure
    }

    /// With ``worker``, exits 1 when no live worker of that id reports within ``timeout``, or, with ``queue``, when
    /// it does not consume that queue: a mistyped id or queue would otherwise look obeyed. What was sent stays in
    /// force for a day, for a worker of that id started meanwhile.
    /// - Parameter what: What was sent: `pause`, `resume`.
    func checkWorkerLives(_ producer: Producer, after what: String) throws {
        guard let worker else { return }
        // Workers may share an id by mistake: any of them that consumes the queue will do.
        let statuses = try producer.workerStatuses(
            timeout: .milliseconds(Int(timeout * 1000)),
            awaitingOne: { $0.workerID == worker && queue.map($0.queues.contains) != false })
        let live = statuses.map(\.workerID)
        let problem: String
        let named = statuses.filter { $0.workerID == worker }
        if !named.isEmpty {
            guard let queue, !named.contains(where: { $0.queues.contains(queue) }) else { return }
            let consumed = Set(named.flatMap(\.queues)).sorted().map(ResultPrinter.printable).joined(separator: ", ")
            problem = """
                worker \(ResultPrinter.printable(worker)) does not consume queue \(ResultPrinter.printable(queue)) \
                (it consumes: \(consumed)); the \(what) holds for a day for a worker of that id started meanwhile
                """
        } else {
            let others =
                live.isEmpty
                ? "none did" : "live: \(live.sorted().map(ResultPrinter.printable).joined(separator: ", "))"
            problem = """
                no live worker reported as \(ResultPrinter.printable(worker)) within \(timeout) s (\(others)); \
                the \(what) holds for a day for a worker of that id started meanwhile
                """
        }
        StandardErrorLines.write("warren: \(problem)\n")
        throw ExitCode.failure
    }
}
