import Foundation
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing
import Warren

extension Integration {
    /// The typed API against a real broker: a typed job through a `SharedProducer`, and a worker, a scheduler and a
    /// producer stopping on a service group's graceful shutdown.
    @Suite("Typed API and services")
    struct TypedAPITests {
        enum Multiply: OperationDefinition {
            static let type = "multiply"
            struct Input: Codable, Sendable { var factors: [Int] }
            struct Output: Codable, Sendable, Equatable { var product: Int }
        }

        /// The producer's view of `multiply` from before its output changed: `product` was a string.
        enum OldMultiply: OperationDefinition {
            static let type = "multiply"
            typealias Input = Multiply.Input
            struct Output: Codable, Sendable { var product: String }
        }

        /// Runs until `release` yields; yields to `started` first.
        enum Gate: OperationDefinition {
            static let type = "gate"
            struct Input: Codable, Sendable {}
            struct Output: Codable, Sendable, Equatable { var released: Bool }
        }

        private static func configuration(queue: String) throws -> Worker.Configuration {
            var configuration = Worker.Configuration(url: try TestEnvironment.brokerURL)
            configuration.queues = [queue]
            configuration.crashJournalDirectory = nil
            return configuration
        }

        @Test("a typed job's result comes back typed; an output that no longer decodes names the field")
        func typedEnqueueAndResult() async throws {
            let queue = TestEnvironment.uniqueName("test.typed")
            var registry = OperationRegistry()
            registry.register(Multiply.self) { input, _ in Multiply.Output(product: input.factors.reduce(1, *)) }
            let worker = try Worker(configuration: Self.configuration(queue: queue), registry: registry)
            let producer = try SharedProducer(url: try TestEnvironment.brokerURL)
            defer { producer.close() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                let job = try await producer.enqueue(
                    Multiply.self, .init(factors: [2, 3, 7]), options: JobOptions(key: "product", queue: queue))
                #expect(try await job.result(timeout: .seconds(60)) == .succeeded(Multiply.Output(product: 42)))
                #expect(job.descriptor.key == "product")

                let old = try await producer.enqueue(
                    OldMultiply.self, .init(factors: [2]), options: JobOptions(queue: queue))
                let error = await #expect(throws: WarrenError.self) { try await old.result(timeout: .seconds(60)) }
                #expect(error?.code == .invalidOutput)
                #expect(error?.message.contains("operation type 'multiply': output.product: expected a string") == true)

                let mistyped = try await producer.enqueue(
                    JobRequest(type: "multiply", input: ["factors": "2,3"], queue: queue), watch: true)
                let result = try await producer.result(of: mistyped.id, timeout: .seconds(60))
                #expect(result.error?.code == "invalidInput")
                #expect(result.error?.message.contains("operation type 'multiply': input.factors") == true)
                worker.stop()
                try await group.waitForAll()
            }
        }

        @Test("a service group's graceful shutdown drains the worker's running job, and run() returns")
        func gracefulShutdownDrains() async throws {
            let queue = TestEnvironment.uniqueName("test.service")
            let (started, didStart) = AsyncStream<Void>.makeStream()
            let released = Atomic(false)
            var registry = OperationRegistry()
            registry.register(Gate.self) { _, job in
                didStart.yield()
                while !released.load(ordering: .relaxed), !job.isCancelled {
                    try await Task.sleep(for: .milliseconds(5))
                }
                return Gate.Output(released: released.load(ordering: .relaxed))
            }
            var configuration = try Self.configuration(queue: queue)
            configuration.shutdownGracePeriod = .seconds(120)
            let worker = try Worker(configuration: configuration, registry: registry)
            let scheduler = try Scheduler(
                configuration: .init(
                    url: try TestEnvironment.brokerURL,
                    schedules: [
                        Schedule(
                            name: TestEnvironment.uniqueName("hourly"), recurrence: .every(.seconds(3600)),
                            type: "gate", queue: queue)
                    ]))
            // One producer is a service of the group; the other, outside it, waits for the job's result.
            let service = try SharedProducer(url: try TestEnvironment.brokerURL)
            let jobs = try SharedProducer(url: try TestEnvironment.brokerURL)
            defer { jobs.close() }
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await worker.run() }
                    group.addTask { try await scheduler.run() }
                    group.addTask { try await service.run() }
                    let job = try await jobs.enqueue(Gate.self, .init(), options: JobOptions(queue: queue))
                    for await _ in started { break }
                    trigger.triggerGracefulShutdown()
                    // The worker takes no new job, but lets the running one finish: it is not cancelled.
                    released.store(true, ordering: .relaxed)
                    #expect(try await job.result(timeout: .seconds(60)) == .succeeded(Gate.Output(released: true)))
                    try await group.waitForAll()
                }
            }
            #expect(!worker.stoppedToRecycle)
            // The producer of the group closed as the group shut down.
            let error = await #expect(throws: WarrenError.self) {
                try await service.enqueue(JobRequest(type: "gate", queue: queue))
            }
            #expect(error?.message.contains("closed") == true)
        }
    }
}
