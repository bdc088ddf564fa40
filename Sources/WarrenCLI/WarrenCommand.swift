import AMQP
import ArgumentParser
import Foundation
import Warren

/// The `warren` command: workers, producers and results over RabbitMQ.
///
/// The `warren` executable adds `warren bench` and `warren dashboard` to these commands (``configuration(adding:)``),
/// from targets of their own: a worker executable built on this library links neither the benchmark nor Hummingbird.
public struct WarrenCommand: ParsableCommand {
    public static let configuration = configuration(adding: [])

    /// The configuration of a `warren` root command with `extra` subcommands after the library's own.
    package static func configuration(adding extra: [any ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "warren",
            abstract: "Run operations on a pool of workers over RabbitMQ.",
            discussion: """
                Exit codes: 0 success; 1 error (bad broker URL, refused credentials, broker down, output \
                that cannot be written); 3 the awaited job failed; 4 it was cancelled; 5 no result in time; \
                6 a unique job not enqueued (another job of its key holds the lock); 64 bad arguments; \
                128 + N enqueue stopped by signal N (the jobs enqueued are printed).
                """,
            version: WarrenVersion.string,
            subcommands: [
                WorkerCommand.self, EnqueueCommand.self, CancelCommand.self, ResultsCommand.self, StatusCommand.self,
                PauseCommand.self, ResumeCommand.self, ResizeCommand.self, UnlockCommand.self, DeadCommand.self,
                PurgeCommand.self, ScheduleCommand.self, HealthCommand.self,
            ] + extra
        )
    }

    public init() {}

    /// `warren` alone names no command: a usage error (exit 64), not help and success, so that a script whose
    /// arguments got lost learns of it. `warren --help` lists the commands.
    public func run() throws {
        throw ValidationError("name a command (warren --help lists them)")
    }

    /// Runs the command the arguments name.
    public static func main() {
        main(root: Self.self)
    }

    /// Runs the command the arguments name, among `root`'s subcommands. A `ValidationError` that a command's `run()`
    /// throws (from a file it reads, or what the producer refuses) shows that command's usage, as one from its
    /// `validate()` does, where swift-argument-parser would show the root's (`Usage: warren <subcommand>`).
    package static func main<Root: ParsableCommand>(root: Root.Type) {
        StandardStreams.reserveDescriptors()
        if let problem = StandardStreams.argumentProblem() {
            StandardErrorLines.write("Error: \(problem)\n")
            Root.exit(withError: ExitCode.validationFailure)
        }
        do {
            var command = try Root.parseAsRoot()
            let commandType: any ParsableCommand.Type = Swift.type(of: command)
            do {
                try command.run()
            } catch let error as ValidationError {
                fail(error, usageOf: commandType, root: Root.self)
            }
            try StandardStreams.checkOutput()
        } catch  where Root.exitCode(for: error) == .success {
            // Help and the version: printed here, so that help that cannot be written is no success either.
            let message = Root.fullMessage(for: error)
            if !message.isEmpty { print(message) }
            SystemCall.exit((try? StandardStreams.checkOutput(lost: "the help")) == nil ? ExitCode.failure.rawValue : 0)
        } catch {
            Root.exit(withError: error)
        }
    }

    /// Reports `error` with the usage of `command`, a subcommand of `root`, and exits 64.
    private static func fail<Root: ParsableCommand>(
        _ error: ValidationError, usageOf command: any ParsableCommand.Type, root: Root.Type
    ) -> Never {
        let name = (path(to: command, from: root) ?? [command]).map { $0._commandName }.joined(separator: " ")
        StandardErrorLines.write(
            """
            Error: \(error.message)
            Usage: \(Root.usageString(for: command))
              See '\(name) --help' for more information.

            """)
        Root.exit(withError: ExitCode.validationFailure)
    }

    /// The commands from `root` down to `command`, if it is one of them.
    private static func path(
        to command: any ParsableCommand.Type, from root: any ParsableCommand.Type
    ) -> [any ParsableCommand.Type]? {
        if ObjectIdentifier(root) == ObjectIdentifier(command) { return [root] }
        for subcommand in root.configuration.subcommands {
            if let path = path(to: command, from: subcommand) { return [root] + path }
        }
        return nil
    }
}
