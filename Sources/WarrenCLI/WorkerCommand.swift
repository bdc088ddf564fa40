import ArgumentParser
import Warren

/// `warren worker`: runs the built-in operation types.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Consume jobs into local operation queues and run them until SIGTERM, SIGINT or SIGHUP.",
        discussion: "Built-in operation types: sum, sleep, echo, fail.")

    @OptionGroup var options: WorkerOptions

    func run() throws {
        try options.run(registry: .builtIn)
    }
}
