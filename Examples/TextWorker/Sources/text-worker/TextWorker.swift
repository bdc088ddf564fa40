import ArgumentParser
import Warren
import WarrenCLI

/// `text-worker`: a Warren worker that runs the built-in operation types and this package's text operations.
///
/// All of `warren worker`'s options come from ``WarrenCLI/WorkerOptions``; this command only adds operation types.
/// `wordcount` runs on the local queue `cpu`, so start the worker with `--local-queue cpu=N` (or move it elsewhere
/// with `--assign wordcount=default`).
@main
struct TextWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "text-worker",
        abstract: "A Warren worker with its own text operations; runs until SIGTERM or SIGINT.",
        discussion: """
            Operation types: wordcount (on local queue cpu), shout, validate-email, and the built-in sum, sleep, \
            echo, fail. Give the cpu local queue a width:
              text-worker --url amqp://guest:guest@localhost:5672/%2F --local-queue cpu=2
            """)

    @OptionGroup var options: WorkerOptions

    func run() throws {
        var registry = OperationRegistry.builtIn
        registry.registerTextOperations()
        try options.run(registry: registry)
    }
}
