import ArgumentParser
import Warren

/// `warren cancel`: cancels jobs wherever they are.
struct CancelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel jobs by id, wherever they are: executing, waiting in a worker, or still in the broker.",
        discussion: """
            Each cancelled job ends with one `cancelled` result. Workers started later (within a day) honour the \
            cancellation too.
            Examples:
              warren cancel 3f0c…  7a1e…
              warren cancel --key totals --before 1763779200123456
              warren cancel --all --queue images
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: "Ids of the jobs to cancel.")
    var ids: [String] = []

    @Option(name: .long, help: "With --before: cancel every job of this key older than that sequence.")
    var key: String?

    @Option(name: .long, help: "With --key: the sequence number older jobs are below.")
    var before: UInt64?

    @Flag(name: .long, help: "Cancel every job enqueued so far: in the broker, waiting in workers and executing.")
    var all = false

    @Option(name: .long, help: "With --all: only the jobs of this broker queue.")
    var queue: String?

    func validate() throws {
        if ids.isEmpty && key == nil && !all { throw ValidationError("name job ids, or --key with --before, or --all") }
        if queue != nil && !all { throw ValidationError("--queue goes with --all") }
        try QueueArgument.validate(queue.map { [$0] } ?? [])
        if (key == nil) != (before == nil) { throw ValidationError("--key and --before go together") }
    }

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        if !ids.isEmpty {
            try producer.cancel(jobIDs: ids)
            print("cancellation sent for \(ids.count) job\(ids.count == 1 ? "" : "s")")
        }
        if all {
            try producer.cancelAll(queue: queue)
            print("cancellation sent for every job enqueued so far\(queue.map { " on queue \($0)" } ?? "")")
        }
        if let key, let before {
            try producer.supersede(key: key, before: before)
            print("cancellation sent for jobs of key '\(key)' below sequence \(before)")
        }
    }
}
