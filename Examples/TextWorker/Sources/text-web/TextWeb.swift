import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import TextOperations
import Warren

/// `text-web`: an HTTP server that enqueues text jobs, beside the worker that runs them and a scheduler, all in one
/// `ServiceGroup`.
///
/// ```sh
/// curl -X POST localhost:8080/shout -d 'hello'          # waits for the job: HELLO
/// curl -X POST localhost:8080/wordcount -d 'a b c'      # 202, the job id; the count runs in the background
/// ```
///
/// The scheduler enqueues a `wordcount` of a fixed text every minute. On SIGTERM or SIGINT the group shuts down in
/// reverse order: the HTTP server stops taking requests, then the scheduler, the worker, and last the producer.
@main
struct TextWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "text-web",
        abstract: "An HTTP server that enqueues text jobs, with their worker and a scheduler; runs until SIGTERM.")

    @Option(help: "Broker URL (default: $WARREN_URL, else amqp://guest:guest@localhost:5672/%2F).")
    var url: String?

    @Option(help: "The HTTP port (default: 8080).")
    var port = 8080

    func run() async throws {
        let url = url ?? ProcessInfo.processInfo.environment["WARREN_URL"] ?? "amqp://guest:guest@localhost:5672/%2F"
        let logger = Logger(label: "text-web")

        var registry = OperationRegistry()
        registry.registerTextOperations()
        var workerConfiguration = Worker.Configuration(url: url)
        workerConfiguration.localQueues[OperationRegistry.cpuLocalQueue] = 2
        let worker = try Worker(configuration: workerConfiguration, registry: registry)

        let everyMinute = Schedule(
            name: "minute-count", recurrence: .every(.seconds(60)), type: WordCount.type,
            input: ["text": "one minute more"])
        let scheduler = try Scheduler(configuration: .init(url: url, schedules: [everyMinute]))

        let producer = try SharedProducer(url: url)
        let app = Application(
            router: Self.router(enqueuingWith: producer),
            configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)

        let group = ServiceGroup(
            services: [producer, worker, scheduler, app], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        try await group.run()
    }

    /// The routes: each enqueues a typed job through `producer`.
    static func router(enqueuingWith producer: some JobProducer) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("shout") { request, context -> String in
            let text = String(buffer: try await request.body.collect(upTo: 64 * 1024))
            let job = try await producer.enqueue(Shout.self, .init(text: text))
            switch try await job.result(timeout: .seconds(30)) {
            case .succeeded(let output): return output.text
            case .failed(let error): throw HTTPError(.internalServerError, message: error.description)
            case .cancelled(let cancellation): throw HTTPError(.serviceUnavailable, message: cancellation.description)
            }
        }
        router.post("wordcount") { request, context -> Response in
            let text = String(buffer: try await request.body.collect(upTo: 1024 * 1024))
            let job = try await producer.enqueue(WordCount.self, .init(text: text), watch: false)
            return Response(status: .accepted, body: .init(byteBuffer: ByteBuffer(string: job.id + "\n")))
        }
        return router
    }
}
