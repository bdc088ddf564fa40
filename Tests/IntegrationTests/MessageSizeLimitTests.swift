import AMQP
import Dispatch
import Foundation
import Testing
import Warren

extension Integration {
    /// A broker whose `max_message_size` is below what a worker publishes: it closes the channel of a larger
    /// message, and the worker learns its limit from that.
    @Suite struct MessageSizeLimits {
        /// RabbitMQ's default `max_message_size`.
        static let defaultMaxMessageSize = 134_217_728

        /// Sets the test broker's `max_message_size`, for the channels opened from then on.
        static func setBrokerMaxMessageSize(_ bytes: Int) throws {
            try Chaos.brokerCtl(["eval", "application:set_env(rabbit, max_message_size, \(bytes))."])
        }

        @Test(
            "a result larger than the broker's max_message_size fails its job (resultTooLarge), dead-lettered; results batches fit"
        )
        func resultsAboveTheBrokersLimit() throws {
            try Self.setBrokerMaxMessageSize(65536)
            defer { try? Self.setBrokerMaxMessageSize(Self.defaultMaxMessageSize) }
            let queue = TestEnvironment.uniqueName("max-size")
            defer { BrokerProbe.delete(queue) }
            var registry = OperationRegistry.demo
            registry.register(
                "bytes",
                blocking: { (count: Int, _: JobContext) -> String in
                    String(repeating: "x", count: count)
                })
            var configuration = Worker.Configuration(url: try TestEnvironment.brokerURL)
            configuration.queues = [queue]
            configuration.localQueues = [OperationRegistry.defaultLocalQueue: 8]
            let worker = try Worker(configuration: configuration, registry: registry)
            let ended = DispatchSemaphore(value: 0)
            Thread {
                do { try worker.runOnCurrentThread() } catch { Issue.record("the worker failed: \(error)") }
                ended.signal()
            }.start()
            defer {
                worker.stop()
                #expect(ended.wait(timeout: .now() + 60) == .success, "the worker stopped")
            }
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let producer = try Producer.forTests()
            // Refused at the first publish, the worker's connection closed: the broker says its limit, and the
            // job's redelivery fails.
            let large = try producer.enqueue(JobRequest(type: "bytes", input: 70_000, queue: queue))
            let failed = try tap.waitForResult(large.id)
            #expect(failed.status == .failed)
            #expect(failed.error?.code == "resultTooLarge")
            #expect(failed.error?.message.contains("at most 65536 bytes (its max_message_size)") == true)
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == large.id } }
            #expect(dead.messages.filter { $0.properties.messageID == large.id }.count == 1)
            // Results that fit one by one, not together: stored in as many stream messages as it takes.
            let medium = (0..<8).map { _ in JobRequest(type: "bytes", input: 40_000, queue: queue) }
            try producer.enqueue(medium)
            #expect(try tap.waitForResults(medium.map(\.id)).allSatisfy { $0.status == .succeeded })
            let ids = (medium.map(\.id) + [large.id])
            let stored = try CLI.run(
                ["results", "--json", "--url", try TestEnvironment.brokerURL] + ids.flatMap { ["--job", $0] })
            #expect(stored.status == 0, "\(stored.stderr)")
            for id in ids {
                #expect(stored.stdout.contains("\"jobId\":\"\(id)\""), "\(id) is in the results stream")
            }
        }

        @Test("a fresh worker's first result batch over max_message_size: split and stored again, no job runs twice")
        func batchAboveTheBrokersLimit() throws {
            try Self.setBrokerMaxMessageSize(65536)
            defer { try? Self.setBrokerMaxMessageSize(Self.defaultMaxMessageSize) }
            let queue = TestEnvironment.uniqueName("max-size-batch")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            // Waiting before the worker starts: they end together, and their results fill a batch of some 200 KB.
            let jobs = (0..<10).map { _ in
                JobRequest(type: "echo", input: .string(String(repeating: "x", count: 20_000)), queue: queue)
            }
            try producer.enqueue(jobs)
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "10"])
            defer { worker.terminate() }
            let results = try tap.waitForResults(jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded && $0.attempt == 1 })
            try tap.settle(for: .seconds(2))
            #expect(jobs.allSatisfy { tap.results(for: $0.id).count == 1 }, "no job ran twice")
            #expect(
                !worker.stderr.contains("lost the broker"),
                "the worker kept its connection: \(worker.stderr.split(separator: "\n").filter { $0.contains("lost") })"
            )
            let stored = try CLI.run(
                ["results", "--json", "--url", try TestEnvironment.brokerURL] + jobs.flatMap { ["--job", $0.id] })
            #expect(stored.status == 0, "\(stored.stderr)")
            for job in jobs {
                #expect(stored.stdout.contains("\"jobId\":\"\(job.id)\""), "\(job.id) is in the results stream")
            }
        }

        @Test("a fresh worker's status reply over max_message_size: answered again within it, no job sent back")
        func statusAboveTheBrokersLimit() throws {
            try Self.setBrokerMaxMessageSize(65536)
            defer { try? Self.setBrokerMaxMessageSize(Self.defaultMaxMessageSize) }
            let queue = TestEnvironment.uniqueName("max-size-status")
            defer { BrokerProbe.delete(queue) }
            let workerID = TestEnvironment.uniqueName("worker")
            let worker = try CLI.startWorker(
                queue: queue, id: workerID, arguments: ["--width", "1", "--prefetch", "400"])
            defer { worker.terminate() }
            let jobs = (0..<300).map { _ in
                JobRequest(type: "sleep", input: ["seconds": 60], key: String(repeating: "k", count: 200), queue: queue)
            }
            try Producer.forTests().enqueue(jobs)
            try BrokerProbe.expectReady(in: queue, 0, "the worker holds them all")
            let status = try CLI.run(
                ["status", "--jobs", "--jobs-limit", "1000", "--url", try TestEnvironment.brokerURL])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("more jobs"), "\(status.stdout.suffix(300))")
            #expect(
                !worker.stderr.contains("lost the broker"),
                "the worker kept its connection: \(worker.stderr.split(separator: "\n").filter { $0.contains("lost") })"
            )
            #expect(!status.stdout.contains("attempt=2"), "no job went back to the broker")
        }

        @Test("a job larger than the broker's max_message_size is refused at enqueue: not enqueued, nor those after it")
        func jobsAboveTheBrokersLimit() throws {
            try Self.setBrokerMaxMessageSize(65536)
            defer { try? Self.setBrokerMaxMessageSize(Self.defaultMaxMessageSize) }
            let queue = TestEnvironment.uniqueName("max-size-job")
            defer { BrokerProbe.delete(queue) }
            let small = JobRequest(type: "echo", input: 1, queue: queue)
            let large = JobRequest(type: "echo", input: .string(String(repeating: "x", count: 70_000)), queue: queue)
            let after = JobRequest(type: "echo", input: 2, queue: queue)
            let error = #expect(throws: WarrenError.self) { try Producer.forTests().enqueue([small, large, after]) }
            #expect(error?.code == .broker)
            #expect(
                error?.message.hasPrefix(
                    "job \(large.id) is 70") == true
                    && error?.message.contains(
                        "bytes; the broker takes messages of at most 65536 bytes (its max_message_size): it was not "
                            + "enqueued, nor the 1 after it; the broker did not confirm job \(small.id) before it")
                        == true,
                "\(String(describing: error))")
            #expect(error?.unconfirmedJobIDs == [small.id])
        }
    }
}
