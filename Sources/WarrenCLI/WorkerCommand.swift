import ArgumentParser
import Warren

/// `warren worker`: runs the built-in operation types.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Consume jobs into local operation queues and run them until SIGTERM, SIGINT or SIGHUP.",
        discussion: """
            Built-in operation types: sum, sleep, echo, fail.
            Each option can also be set in the environment, as WARREN_ and its name: --max-memory 2G is \
            WARREN_MAX_MEMORY=2G, --queue a --queue b is WARREN_QUEUE=a,b, --priority-queues is \
            WARREN_PRIORITY_QUEUES=true. A settings file (--config, or WARREN_CONFIG) holds the same names, one \
            NAME=value a line. A flag beats the environment, which beats the file.
            """)

    @OptionGroup var options: WorkerOptions

    func run() throws {
        try options.run(registry: .demo)
    }
}
