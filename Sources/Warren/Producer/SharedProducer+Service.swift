import ServiceLifecycle

/// A shared producer is a `Service`: in a `ServiceGroup`, it closes on the group's graceful shutdown.
///
/// ```swift
/// let producer = try SharedProducer(url: url)
/// let group = ServiceGroup(services: [producer, worker, app], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// A group shuts its services down in reverse order: list the producer before the services that enqueue through it.
extension SharedProducer: Service {
    /// Keeps the producer open until the service group's graceful shutdown, or the task's cancellation, then closes
    /// it: calls queued before then still run.
    public func run() async throws {
        let (ended, end) = AsyncStream<Void>.makeStream()
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                for await _ in ended {}
            } onCancel: {
                end.finish()
            }
        } onGracefulShutdown: {
            end.finish()
        }
        close()
    }
}
