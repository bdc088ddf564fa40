import ArgumentParser
import Foundation
import Warren

/// `warren resize`: changes the width of local queues on live workers.
struct ResizeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resize",
        abstract: "Change the width of local queues on live workers, until they restart.",
        discussion: """
            Wider, jobs waiting in the local queue start at once; narrower, executing jobs go on and the next start \
            once fewer execute. A worker without --prefetch holds as many jobs as its local queues are wide in all. \
            Then prints the width each live worker reports, and exits 1 if none reports the local queue or one \
            reports another width.
            Examples:
              warren resize default=8
              warren resize io=32 --worker worker-2
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: ArgumentHelp("A local queue and its new width; several may be given.", valueName: "name=width"))
    var sizes: [String]

    @Option(name: .long, help: "Only this worker (its --worker-id); default: every worker with that local queue.")
    var worker: String?

    @Option(name: .long, help: "Seconds to wait for the workers to report their widths.")
    var timeout: Double = 2

    func validate() throws {
        _ = try widths()
        if !(0...3600).contains(timeout) {
            throw ValidationError("--timeout \(timeout): expected seconds from 0 to 3600")
        }
    }

    /// The local queues and widths asked for, in order.
    private func widths() throws -> [(String, Int)] {
        var seen: Set<String> = []
        return try sizes.map { entry in
            let (name, value) = try WorkerOptions.split(entry, option: "resize", form: "name=width")
            guard let width = Int(value), LocalQueue.widths.contains(width) else {
                throw ValidationError(
                    "resize \(entry): expected a width from \(LocalQueue.widths.lowerBound) to \(LocalQueue.widths.upperBound)"
                )
            }
            guard seen.insert(name).inserted else { throw ValidationError("resize: \(name) is given twice") }
            return (name, width)
        }
    }

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        let widths = try widths()
        for (name, width) in widths { try producer.resize(localQueue: name, width: width, worker: worker) }
        let statuses = try producer.workerStatuses(timeout: .milliseconds(Int(timeout * 1000)), awaiting: worker)
            .filter { worker == nil || $0.workerID == worker }
        var problems: [String] = []
        for (name, asked) in widths {
            let holders = statuses.compactMap { status in
                status.localQueues.first { $0.name == name }.map { (status.workerID, $0.width) }
            }
            for (workerID, width) in holders {
                print("\(ResultPrinter.printable(workerID)) local \(name) width=\(width)")
                if width != asked {
                    problems.append("worker \(workerID) reports width \(width) for \(name), not \(asked)")
                }
            }
            if holders.isEmpty { problems.append(absence(of: name, among: statuses)) }
        }
        guard problems.isEmpty else {
            fflush(nil)
            for problem in problems { StandardErrorLines.write("warren: \(problem)\n") }
            throw ExitCode.failure
        }
    }

    /// Why no worker printed local queue `name`: none answered, or those that did have no such local queue.
    private func absence(of name: String, among statuses: [WorkerStatus]) -> String {
        let seconds = timeout.rounded() == timeout ? String(Int(timeout)) : String(timeout)
        let theirs = Set(statuses.flatMap { $0.localQueues.map(\.name) }).sorted().joined(separator: ", ")
        switch (worker.map(ResultPrinter.printable), statuses.isEmpty) {
        case (let worker?, true): return "worker \(worker) did not answer within \(seconds) s"
        case (nil, true): return "no live worker answered within \(seconds) s"
        case (let worker?, false): return "worker \(worker) has no local queue \(name) (its local queues: \(theirs))"
        case (nil, false): return "no live worker has local queue \(name) (their local queues: \(theirs))"
        }
    }
}
