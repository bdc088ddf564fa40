import ArgumentParser
import Foundation
import Warren

/// `warren dead`: inspect and replay dead-lettered jobs.
struct DeadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead",
        abstract: "Inspect, replay and delete dead-lettered jobs (the warren.dead queue).",
        subcommands: [List.self, Requeue.self, Delete.self])

    /// `warren dead` alone: a usage error, as `warren` alone is.
    func run() throws {
        throw ValidationError("name a subcommand: list, requeue or delete")
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List dead letters with their reasons; the queue keeps them.",
            discussion: "Line format: JOB-ID reason=CODE queue=Q type=T bytes=N: MESSAGE")

        @OptionGroup var broker: BrokerOptions

        @Option(name: .long, help: "Show at most this many (0: only count them).")
        var limit: Int = 1000

        @Flag(name: .long, help: "Print one JSON object per line.")
        var json = false

        func validate() throws {
            if limit < 0 { throw ValidationError("--limit must be 0 or more") }
        }

        func run() throws {
            let dead = try DeadLetterQueue(url: broker.brokerURL)
            defer { dead.close() }
            let (letters, total) = try dead.listing(limit: limit)
            for letter in letters {
                if json {
                    var object: [String: Any] = ["reason": letter.reason, "bytes": letter.size]
                    object["jobId"] = letter.jobID
                    object["type"] = letter.type
                    object["message"] = letter.message
                    object["queue"] = letter.queue
                    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                    print(String(decoding: data, as: UTF8.self))
                } else {
                    print(DeadCommand.line(letter))
                }
            }
            fflush(nil)  // the letters first, also where both streams go to one file
            // Letters may come or go while it lists them.
            let summary =
                letters.count < limit || letters.count >= total
                ? "\(letters.count) dead letter(s)"
                : "\(letters.count) of \(total) dead letter(s) (--limit \(limit))"
            StandardErrorLines.write("\(summary)\n")
        }
    }

    struct Requeue: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send dead letters back to their job queues, attempt count reset: the given ids, or all.",
            discussion: """
                Exits 1 when an id has no dead letter, or a chosen letter stays dead (it names no queue, its \
                queue is gone, or the broker refused its copy); the others are requeued all the same. A job's \
                later letters (a duplicate delivery's) stay.
                Examples:
                  warren dead requeue 3f0c… 7a1e…
                  warren dead requeue --all
                """)

        @OptionGroup var broker: BrokerOptions

        @Argument(help: "Job ids to requeue.")
        var ids: [String] = []

        @Flag(name: .long, help: "Requeue every dead letter.")
        var all = false

        func validate() throws {
            if ids.isEmpty == !all { throw ValidationError("name job ids, or --all (not both)") }
        }

        func run() throws {
            let dead = try DeadLetterQueue(url: broker.brokerURL)
            defer { dead.close() }
            let report = try dead.requeue(jobIDs: all ? nil : Set(ids))
            for letter in report.requeued {
                print("requeued \(letter.jobID ?? "-") to \(ResultPrinter.printable(letter.queue ?? "-"))")
            }
            fflush(nil)  // in the order things happened, also where both streams go to one file
            for letter in report.stayed {
                let why =
                    letter.queue.map { "its queue '\(ResultPrinter.printable($0))' does not exist" }
                    ?? "it names no queue (no x-warren-original-queue header, no x-death)"
                StandardErrorLines.write("warren: \(letter.jobID ?? "-") stays dead: \(why)\n")
            }
            for letter in report.refused {
                StandardErrorLines.write(
                    """
                    warren: \(letter.jobID ?? "-") stays dead: the broker refused its copy for queue \
                    '\(ResultPrinter.printable(letter.queue ?? "-"))' (basic.nack: is the queue at its length limit, \
                    with x-overflow reject-publish? with reject-publish-dlx, warren.dead now holds the job twice)

                    """)
            }
            for letter in report.duplicates {
                StandardErrorLines.write(
                    "warren: a later letter of job \(letter.jobID ?? "-") stays dead: requeueing it too would run the job twice\n"
                )
            }
            if let why = report.copiesLeft {
                StandardErrorLines.write(
                    """
                    warren: the copies of the requeued letters stay in \(Topology.deadWatchQueue) (\(why)): a worker \
                    that takes one answers its job with a failed result (brokerDeadLettered) although it runs again

                    """)
            }
            var missing = false
            if !all {
                let found = Set(report.requeued.compactMap(\.jobID)).union(report.stayed.compactMap(\.jobID))
                    .union(report.refused.compactMap(\.jobID))
                for id in ids where !found.contains(id) {
                    StandardErrorLines.write("warren: no dead letter for job \(ResultPrinter.printable(id))\n")
                    missing = true
                }
            }
            if missing || !report.stayed.isEmpty || !report.refused.isEmpty { throw ExitCode.failure }
        }
    }

    static func line(_ letter: DeadLetter) -> String {
        var fields = [letter.jobID ?? "-", "reason=\(ResultPrinter.printable(letter.reason))"]
        if let queue = letter.queue { fields.append("queue=\(ResultPrinter.printable(queue))") }
        if let type = letter.type { fields.append("type=\(ResultPrinter.printable(type))") }
        fields.append("bytes=\(letter.size)")
        return fields.joined(separator: " ") + (letter.message.map { ": \(ResultPrinter.printable($0))" } ?? "")
    }
}
