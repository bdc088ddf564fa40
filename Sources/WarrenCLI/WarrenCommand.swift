import ArgumentParser

/// The `warren` command: workers, producers and results over RabbitMQ.
public struct WarrenCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "warren",
        abstract: "Run operations on a pool of workers over RabbitMQ.",
        discussion: """
            Exit codes: 0 success; 1 error (bad broker URL, refused credentials, broker down); \
            3 the awaited job failed; 4 it was cancelled; 5 no result in time; 6 a unique job not \
            enqueued (another job of its key holds the lock); 64 bad arguments.
            """,
        subcommands: [
            WorkerCommand.self, EnqueueCommand.self, CancelCommand.self, ResultsCommand.self, StatusCommand.self,
            PauseCommand.self, ResumeCommand.self, ResizeCommand.self, UnlockCommand.self, DeadCommand.self,
            ScheduleCommand.self, HealthCommand.self, BenchCommand.self,
        ]
    )

    public init() {}
}
