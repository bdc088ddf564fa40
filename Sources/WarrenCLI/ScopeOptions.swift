import ArgumentParser

/// Which workers and queues `pause` and `resume` apply to.
struct ScopeOptions: ParsableArguments {
    @Option(name: .long, help: "Only this worker (its --worker-id); default: every worker.")
    var worker: String?

    @Option(name: .long, help: "Only this broker queue; default: every queue.")
    var queue: String?

    func validate() throws {
        try QueueArgument.validate(queue.map { [$0] } ?? [])
    }

    var description: String {
        "\(worker.map { "worker \($0)" } ?? "every worker"), \(queue.map { "queue \($0)" } ?? "every queue")"
    }
}
