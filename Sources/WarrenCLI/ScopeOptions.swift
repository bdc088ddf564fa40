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
        if !(0...3600).contains(timeout) { throw ValidationError("--timeout \(timeout): expected seconds from 0 to 3600") }
    }

    var description: String {
        "\(worker.map { "worker \(ResultPrinter.printable($0))" } ?? "every worker"), "
            + "\(queue.map { "queue \($0)" } ?? "every queue")"
    }

    /// With ``worker``, exits 1 when no live worker of that id reports within ``timeout``: a mistyped id would
    /// otherwise look obeyed. What was sent stays in force for a day, for a worker of that id started meanwhile.
    /// - Parameter what: What was sent: `pause`, `resume`.
    func checkWorkerLives(_ producer: Producer, after what: String) throws {
        guard let worker else { return }
        let live = try producer.workerStatuses(timeout: .milliseconds(Int(timeout * 1000)), awaiting: worker)
            .map(\.workerID)
        guard !live.contains(worker) else { return }
        let others =
            live.isEmpty ? "none did" : "live: \(live.sorted().map(ResultPrinter.printable).joined(separator: ", "))"
        FileHandle.standardError.write(
            Data(
                """
                warren: no live worker reported as \(ResultPrinter.printable(worker)) within \(timeout) s (\(others)); \
                the \(what) holds for a day for a worker of that id started meanwhile

                """.utf8))
        throw ExitCode.failure
    }
}
