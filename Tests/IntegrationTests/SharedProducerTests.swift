import Foundation
import Glibc
import Testing
import Warren

/// One producer for a whole process: tasks on any thread enqueue through it, and it connects again after the
/// broker dropped its connection.
extension Integration {
    @Suite struct SharedProducers {
        private static func make() throws -> SharedProducer {
            let directory = try TestEnvironment.temporaryDirectory()
            return try SharedProducer(
                url: try TestEnvironment.brokerURL,
                sequences: SequenceStore(path: directory.appendingPathComponent("sequence").path))
        }

        @Test("tasks enqueue through one shared producer at once; every job runs, with a sequence number of its own")
        func concurrentTasks() async throws {
            let queue = TestEnvironment.uniqueName("shared")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let producer = try Self.make()
            defer { producer.close() }

            let descriptors = try await withThrowingTaskGroup(of: [OperationDescriptor].self) { group in
                for task in 0..<20 {
                    group.addTask {
                        try await producer.enqueue(
                            (0..<5).map { index in
                                JobRequest(
                                    type: "echo", input: ["task": .number(Double(task * 5 + index))], queue: queue)
                            })
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(descriptors.count == 100)
            #expect(Set(descriptors.map(\.sequence)).count == 100)
            let results = try tap.waitForResults(descriptors.map(\.id))
            #expect(results.count == 100 && results.allSatisfy { $0.status == .succeeded })
        }

        @Test("tasks await results of watched jobs: a quick job's result does not wait for a slow one's")
        func awaitsResults() async throws {
            let queue = TestEnvironment.uniqueName("shared-results")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let producer = try Self.make()
            defer { producer.close() }

            let slow = try await producer.enqueue(
                JobRequest(type: "sleep", input: ["seconds": 2], queue: queue), watch: true)
            let slowResult = Task { try await producer.result(of: slow.id, timeout: .seconds(30)) }
            let quick = try await producer.enqueue(JobRequest(type: "echo", input: "quick", queue: queue), watch: true)
            let quickResult = try await producer.result(of: quick.id, timeout: .seconds(30))
            #expect(quickResult.status == .succeeded && quickResult.output == "quick")
            let slowEnded = try await slowResult.value
            #expect(slowEnded.status == .succeeded)
            #expect(try #require(quickResult.timings.finishedAt) < #require(slowEnded.timings.finishedAt))

            let many = try await producer.enqueue(
                (0..<20).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) }, watch: true)
            let outputs = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
                for descriptor in many {
                    group.addTask { try await producer.result(of: descriptor.id, timeout: .seconds(30)).output }
                }
                return try await group.reduce(into: Set<JSONValue>()) { $0.insert($1 ?? .null) }
            }
            #expect(outputs == Set((0..<20).map { JSONValue.number(Double($0)) }))

            // A job it does not watch, or whose result it handed out, has no result coming: said at once.
            for jobID in ["no-such-job", quick.id] {
                let error = await #expect(throws: WarrenError.self) {
                    try await producer.result(of: jobID, timeout: .seconds(60))
                }
                #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
                #expect(error?.message.hasPrefix("job \(jobID) is not watched by this producer") == true)
            }
        }

        @Test("a shared producer that never connected says a job is not watched, not that a connection was lost")
        func unwatchedOnAFreshProducer() async throws {
            let producer = try Self.make()
            defer { producer.close() }
            let error = await #expect(throws: WarrenError.self) {
                try await producer.result(of: "enqueued-elsewhere", timeout: .seconds(60))
            }
            #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
            let plain = try Producer.forTests()
            let waited = #expect(throws: WarrenError.self) {
                try plain.waitForResult(of: "enqueued-elsewhere", timeout: .seconds(60))
            }
            #expect(waited?.code == .invalidConfiguration, "\(String(describing: waited))")
        }

        @Test("cancelling a task ends its wait for a result at once, and a call not yet run does not run")
        func taskCancellation() async throws {
            let queue = TestEnvironment.uniqueName("shared-cancel")
            defer { BrokerProbe.delete(queue) }
            let producer = try Self.make()
            defer { producer.close() }
            // No worker runs: the result never comes.
            let watched = try await producer.enqueue(JobRequest(type: "echo", queue: queue), watch: true)
            let waiting = Task { try await producer.result(of: watched.id, timeout: .seconds(60)) }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }

            // A call that holds the thread for a second, and one queued behind it whose task is cancelled.
            let running = DispatchSemaphore(value: 0)
            let holding = Task {
                try await producer.withProducer { _ in
                    running.signal()
                    Thread.sleep(forTimeInterval: 1)
                }
            }
            running.wait()
            let queued = Task { try await producer.enqueue(JobRequest(type: "echo", queue: queue)) }
            queued.cancel()
            await #expect(throws: CancellationError.self) { try await queued.value }
            try await holding.value
            #expect(try BrokerProbe.depth(of: queue) == 1, "only the watched job was enqueued")
        }

        @Test("after the broker closed its connection, the shared producer connects again for the next call")
        func reconnects() async throws {
            let queue = TestEnvironment.uniqueName("shared-reconnect")
            defer { BrokerProbe.delete(queue) }
            let producer = try Self.make()
            defer { producer.close() }
            // No worker runs: this result could only come to the reply queue the connection takes with it.
            let watched = try await producer.enqueue(JobRequest(type: "echo", queue: queue), watch: true)
            let waiting = Task { try await producer.result(of: watched.id, timeout: .seconds(60)) }
            try Integration.Chaos.closeConnections(
                named: "warren producer \(getpid())", reason: "test: the producer loses the broker")
            let lost = await #expect(throws: WarrenError.self) { try await waiting.value }
            #expect(lost?.code == .broker && lost?.message.contains(watched.id) == true, "\(String(describing: lost))")
            // A call learns that the connection is gone when it uses it, unless a wait for a result found out first:
            // at most one call fails, the next connects.
            var failures: [WarrenError] = []
            var published: OperationDescriptor?
            while published == nil, failures.count < 2 {
                do {
                    published = try await producer.enqueue(JobRequest(type: "echo", queue: queue))
                } catch let error as WarrenError {
                    failures.append(error)
                }
            }
            #expect(published != nil, "\(failures)")
            #expect(failures.count <= 1 && failures.allSatisfy { $0.code == .broker }, "\(failures)")
            #expect(try BrokerProbe.depth(of: queue) == 2)
        }

        @Test("after close, calls throw and publish nothing")
        func close() async throws {
            let queue = TestEnvironment.uniqueName("shared-close")
            defer { BrokerProbe.delete(queue) }
            let producer = try Self.make()
            _ = try await producer.enqueue(JobRequest(type: "echo", queue: queue))
            producer.close()
            let error = await #expect(throws: WarrenError.self) {
                try await producer.enqueue(JobRequest(type: "echo", queue: queue))
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message == "the shared producer was closed")
            #expect(try BrokerProbe.depth(of: queue) == 1)
            await #expect(throws: WarrenError.self) { try await producer.result(of: "x", timeout: .seconds(1)) }
        }
    }
}
