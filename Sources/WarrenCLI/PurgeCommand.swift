import ArgumentParser
import Foundation
import Warren

/// `warren purge QUEUE --yes`: removes the jobs waiting in a job queue, each with a `cancelled` result.
struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove the jobs waiting in a job queue; each ends cancelled, reason purged.",
        discussion: """
            Takes the jobs the queue holds as it starts, and those of its delay queues (scheduled jobs, retries). \
            Each job's unique lock is released and its cancelled result published, as a worker would; it leaves the \
            queue once the broker confirmed the result. A message that is no valid job is dead-lettered with the \
            reason a worker would give. Jobs a worker holds are not touched: warren cancel reaches them.
            Without --yes, says what it would purge and exits 64.
            Example:
              warren purge emails --yes
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: "The job queue to purge.")
    var queue: String

    @Flag(name: .long, help: "Purge: without it, nothing is removed.")
    var yes = false

    func validate() throws {
        if let problem = Topology.problem(withJobQueue: queue) { throw ValidationError(problem) }
    }

    func run() throws {
        let purge = try QueuePurge(url: broker.brokerURL)
        defer { purge.close() }
        guard yes else {
            let count = try checked { try purge.count(queue) }
            throw ValidationError(
                """
                this would purge \(count.waiting) waiting job(s) and \(count.delayed) delayed job(s) from queue \
                '\(ResultPrinter.printable(queue))'; add --yes to purge them
                """)
        }
        let report = try checked { try purge.purge(queue) }
        for letter in report.deadLettered {
            StandardErrorLines.write(
                """
                warren: dead-lettered a message that is no valid job (reason \(ResultPrinter.printable(letter.reason)), \
                job \(letter.jobID.map(ResultPrinter.printable) ?? "-")): see warren dead list

                """)
        }
        if report.refused > 0 {
            StandardErrorLines.write(
                """
                warren: \(report.refused) job(s) stay in the queue: the broker refused their result or dead letter \
                (basic.nack: is a queue it goes to at its length limit, with x-overflow reject-publish?)

                """)
        }
        print(
            "purged \(report.cancelled.count + report.deadLettered.count) message(s) from "
                + "\(ResultPrinter.printable(queue)): \(report.cancelled.count) job(s) cancelled (reason purged), "
                + "\(report.deadLettered.count) dead-lettered")
        if report.refused > 0 { throw ExitCode.failure }
    }

    /// Runs `body`; a queue that is not there is a bad argument.
    private func checked<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as WarrenError where error.code == .invalidConfiguration {
            throw ValidationError(error.message)
        }
    }
}
