import AMQP
import Dispatch
import Foundation
import Testing
import Warren

extension Integration {
    /// A worker stopping while its job ignores cancellation: it leaves the job to the broker instead of waiting for
    /// good. The worker runs in this process, so that its operation type can be one that never checks
    /// `isCancelled` (no built-in type behaves so badly).
    @Suite struct Stopping {
        /// Blocks its thread, ignoring cancellation, until `release` is signalled; signals `started` first.
        static func registry(started: DispatchSemaphore, release: DispatchSemaphore) -> OperationRegistry {
            var registry = OperationRegistry()
            registry.register(
                "stubborn",
                blocking: { (_: JSONValue, _: JobContext) -> String in
                    started.signal()
                    release.wait()
                    return "released"
                })
            return registry
        }

        /// Starts a worker with `grace` on a thread, runs one `stubborn` job, stops the worker `stops` times, and
        /// returns whether the worker's run ended; the job is released (and its thread freed) before returning.
        static func stopWithStubbornJob(grace: Duration, stops: Int, queue: String) throws -> Bool {
            let (started, release, ended) = (
                DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
            )
            defer { release.signal() }
            var configuration = try configuration(queue: queue)
            configuration.shutdownGracePeriod = grace
            let worker = try Worker(
                configuration: configuration, registry: registry(started: started, release: release))
            let thread = Thread {
                do { try worker.runOnCurrentThread() } catch { Issue.record("the worker failed: \(error)") }
                ended.signal()
            }
            thread.start()
            try Producer.forTests().enqueue(JobRequest(type: "stubborn", queue: queue))
            guard started.wait(timeout: .now() + 60) == .success else {
                Issue.record("the job did not start")
                worker.stop()
                worker.stop()
                return false
            }
            for _ in 0..<stops { worker.stop() }
            return ended.wait(timeout: .now() + 60) == .success
        }

        /// A worker's configuration for the test broker, taking jobs from `queue`.
        static func configuration(queue: String) throws -> Worker.Configuration {
            var configuration = Worker.Configuration(url: try TestEnvironment.brokerURL)
            configuration.queues = [queue]
            return configuration
        }

        /// Waits up to 30 s for the job to be back in `queue`.
        static func expectRequeued(_ queue: String) throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while try BrokerProbe.depth(of: queue) != 1, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(try BrokerProbe.depth(of: queue) == 1, "the job is back in its queue")
        }

        @Test("a job that ignores its cancellation is left to the broker a grace period after it, and requeued")
        func abandonedAfterSecondGrace() throws {
            let queue = TestEnvironment.uniqueName("stubborn")
            defer { BrokerProbe.delete(queue) }
            #expect(
                try Self.stopWithStubbornJob(grace: .milliseconds(300), stops: 1, queue: queue), "the worker stopped")
            try Self.expectRequeued(queue)
        }

        @Test("a second stop request stops waiting at once, however long the grace period")
        func secondStop() throws {
            let queue = TestEnvironment.uniqueName("stubborn-twice")
            defer { BrokerProbe.delete(queue) }
            #expect(try Self.stopWithStubbornJob(grace: .seconds(3600), stops: 2, queue: queue), "the worker stopped")
            try Self.expectRequeued(queue)
        }

        @Test("cancelling the task that awaits Worker.run() or Scheduler.run() stops it, as stop() does")
        func taskCancellation() async throws {
            let queue = TestEnvironment.uniqueName("task-cancel")
            defer { BrokerProbe.delete(queue) }
            let worker = try Worker(configuration: Self.configuration(queue: queue), registry: .demo)
            let schedule = Schedule(
                name: TestEnvironment.uniqueName("task-cancel"), recurrence: .every(.seconds(3600)), type: "echo",
                queue: queue)
            let scheduler = try Scheduler(
                configuration: .init(url: try TestEnvironment.brokerURL, schedules: [schedule]))
            let ended = DispatchSemaphore(value: 0)
            let running = [
                Task {
                    defer { ended.signal() }
                    try await worker.run()
                },
                Task {
                    defer { ended.signal() }
                    try await scheduler.run()
                },
            ]
            let producer = try Producer.forTests()
            let job = try producer.enqueue(JobRequest(type: "echo", input: 1, queue: queue), watch: true)
            #expect(try producer.waitForResult(of: job.id, timeout: .seconds(60)).status == .succeeded)
            for task in running { task.cancel() }
            for _ in running { #expect(ended.wait(timeout: .now() + 60) == .success, "a run ended") }
            for task in running { try await task.value }
        }

        @Test("a worker runs once at a time: a second run throws; once stopped, it runs again")
        func oneRunAtATime() async throws {
            let queue = TestEnvironment.uniqueName("run-twice")
            defer { BrokerProbe.delete(queue) }
            let worker = try Worker(configuration: Self.configuration(queue: queue), registry: .demo)
            let producer = try Producer.forTests()
            func expectJobRuns() throws {
                let job = try producer.enqueue(JobRequest(type: "echo", input: 1, queue: queue), watch: true)
                #expect(try producer.waitForResult(of: job.id, timeout: .seconds(60)).status == .succeeded)
            }
            let first = Task { try await worker.run() }
            try expectJobRuns()
            let error = await #expect(throws: WarrenError.self) { try await worker.run() }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("runs already") == true)
            try expectJobRuns()
            worker.stop()
            try await first.value
            let second = Task { try await worker.run() }
            try expectJobRuns()
            worker.stop()
            try await second.value
        }

        @Test("a stop while the worker does not run ends its next run at once, and that run only")
        func stopBeforeRun() async throws {
            let queue = TestEnvironment.uniqueName("stop-before-run")
            defer { BrokerProbe.delete(queue) }
            let worker = try Worker(configuration: Self.configuration(queue: queue), registry: .demo)
            worker.stop()
            let ended = DispatchSemaphore(value: 0)
            let stopped = Task {
                defer { ended.signal() }
                try await worker.run()
            }
            #expect(ended.wait(timeout: .now() + 60) == .success, "the run ended")
            try await stopped.value
            let running = Task { try await worker.run() }
            let producer = try Producer.forTests()
            let job = try producer.enqueue(JobRequest(type: "echo", input: 1, queue: queue), watch: true)
            #expect(try producer.waitForResult(of: job.id, timeout: .seconds(60)).status == .succeeded)
            worker.stop()
            try await running.value
        }

        @Test("cancelling Worker.run()'s task after stop() is no second stop: executing jobs keep their grace period")
        func taskCancellationAfterStop() async throws {
            let queue = TestEnvironment.uniqueName("task-cancel-after-stop")
            defer { BrokerProbe.delete(queue) }
            var configuration = try Self.configuration(queue: queue)
            configuration.workerID = TestEnvironment.uniqueName("graceful")
            let worker = try Worker(configuration: configuration, registry: .demo)
            let running = Task { try await worker.run() }
            let producer = try Producer.forTests()
            let job = try producer.enqueue(
                JobRequest(type: "sleep", input: ["seconds": 1.5], queue: queue), watch: true)
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline,
                try producer.workerStatuses(timeout: .milliseconds(500), awaiting: configuration.workerID)
                    .first(where: { $0.workerID == configuration.workerID })?.localQueues.first?.executing != 1
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            worker.stop()
            running.cancel()
            #expect(try producer.waitForResult(of: job.id, timeout: .seconds(60)).status == .succeeded)
            try await running.value
        }
    }
}
