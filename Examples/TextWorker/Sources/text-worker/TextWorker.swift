import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TextOperations
import Warren

/// `text-worker`: a Warren worker for this package's text operations, hosted by a `ServiceGroup`.
///
/// The group stops the worker gracefully on SIGTERM or SIGINT: it takes no new jobs, lets running ones finish,
/// and exits 0. The demo types of `warren worker` (`sum`, `sleep`, `echo`, `fail`) are not registered: a worker
/// of your own runs only what it registers.
@main
struct TextWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "text-worker",
        abstract: "A Warren worker with its own text operations; runs until SIGTERM or SIGINT.")

    @Option(help: "Broker URL (default: $WARREN_URL, else amqp://guest:guest@localhost:5672/%2F).")
    var url: String?

    @Option(help: "Broker queue to consume; repeat for several (default: warren.default).")
    var queue: [String] = []

    @Option(help: "Width of the local queue cpu, where wordcount runs (default: 2).")
    var cpuWidth = 2

    @Option(help: "Name in results and logs (default: host-pid).")
    var workerID: String?

    func run() async throws {
        var registry = OperationRegistry()
        registry.registerTextOperations()
        let logger = Logger(label: "text-worker")
        var configuration = Worker.Configuration(url: url ?? Self.defaultURL)
        if !queue.isEmpty { configuration.queues = queue }
        configuration.localQueues[OperationRegistry.cpuLocalQueue] = cpuWidth
        if let workerID { configuration.workerID = workerID }
        configuration.logger = logger
        let worker = try Worker(configuration: configuration, registry: registry)
        let group = ServiceGroup(services: [worker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }

    static var defaultURL: String {
        ProcessInfo.processInfo.environment["WARREN_URL"] ?? "amqp://guest:guest@localhost:5672/%2F"
    }
}
