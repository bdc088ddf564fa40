import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Purge {
        @Test(
            "purge asks for --yes, then cancels each waiting job (reason purged) as a worker would, and dead-letters what is no job"
        )
        func purgesWaitingJobs() throws {
            let queue = TestEnvironment.uniqueName("purge")
            let other = TestEnvironment.uniqueName("purge-dependent")
            let delay = Topology.delayQueue(for: queue, seconds: 4096)
            defer { [queue, other, delay].forEach(BrokerProbe.delete) }
            let url = try TestEnvironment.brokerURL
            let results = try MessageTap.results()
            let replies = try MessageTap.replyQueue()
            let deadLetters = try MessageTap.deadLetters()
            let producer = try Producer.forTests()
            let key = TestEnvironment.uniqueName("purge-key")

            let plain = try (0..<2).map { _ in try producer.enqueue(JobRequest(type: "echo", queue: queue)) }
            let replying = try producer.enqueue(JobRequest(type: "echo", queue: queue, replyTo: replies.queue))
            let unique = try producer.enqueue(
                JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(600)))
            // A job waiting in one of the queue's delay queues, as a retry or a scheduled job does.
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            _ = try Topology.declareDelayQueue(for: queue, seconds: 4096, quorum: false, on: connection)
            let delayedID = TestEnvironment.uniqueName("delayed")
            try connection.publish(
                Array(#"{"version":1,"id":"\#(delayedID)","type":"echo","sequence":1}"#.utf8), exchange: "",
                routingKey: delay,
                properties: MessageProperties(contentType: "application/json", persistent: true, expiration: "4096000"),
                channel: 1)
            // A message that is no job, naming a job id.
            let garbageID = TestEnvironment.uniqueName("garbage")
            try connection.publish(
                Array("not json".utf8), exchange: "", routingKey: queue,
                properties: MessageProperties(contentType: "application/json", messageID: garbageID), channel: 1)
            // A job on another worker's queue that requires the success of one of the purged jobs.
            let worker = try CLI.startWorker(queue: other)
            defer { worker.terminate() }
            let dependent = try producer.enqueue(
                JobRequest(type: "echo", queue: other, dependencies: [plain[0].id], requireSuccess: true))
            try worker.waitForStderr(containing: "parked until its dependencies end")

            let asked = try CLI.run(["purge", queue, "--url", url])
            #expect(asked.status == 64, "\(asked.stderr)")
            #expect(
                asked.stderr.contains(
                    "this would purge 5 waiting job(s) and 1 delayed job(s) from queue '\(queue)'; add --yes to purge them"
                ),
                "\(asked.stderr)")
            #expect(try BrokerProbe.depth(of: queue) == 5, "nothing purged without --yes")

            let purged = try CLI.run(["purge", queue, "--yes", "--url", url])
            #expect(purged.status == 0, "\(purged.stderr)")
            #expect(
                purged.stdout.contains(
                    "purged 6 message(s) from \(queue): 5 job(s) cancelled (reason purged), 1 dead-lettered"),
                "\(purged.stdout)")
            #expect(
                purged.stderr.contains(
                    "dead-lettered a message that is no valid job (reason malformedMessage, job \(garbageID))"))
            #expect(try BrokerProbe.depth(of: queue) == 0)
            #expect(try BrokerProbe.depth(of: delay) == 0)

            let cancelled = plain.map(\.id) + [unique.id, delayedID]
            for result in try results.waitForResults(cancelled) {
                #expect(result.status == .cancelled, "\(result.jobID)")
                #expect(result.cancellation?.reason == "purged")
                #expect(result.cancellation?.message == "purged from queue '\(queue)' by warren purge")
            }
            #expect(try replies.waitForResult(replying.id).cancellation?.reason == "purged", "to its reply queue")
            #expect(try results.waitForResult(garbageID).error?.code == "malformedMessage")
            try deadLetters.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == garbageID } }
            let letter = try #require(deadLetters.messages.first { $0.properties.messageID == garbageID })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "malformedMessage")
            #expect(letter.properties.headers?[Topology.deadQueueHeader]?.stringValue == queue)

            // Stored in the results stream: warren results, and the dependent's worker, see them.
            let stored = try CLI.run(["results", "--job", unique.id, "--job", replying.id, "--url", url])
            #expect(stored.stdout.contains("cancelled \(unique.id)"), "\(stored.stdout)")
            #expect(stored.stdout.contains("cancelled \(replying.id)"), "\(stored.stdout)")
            let dependentResult = try results.waitForResult(dependent.id)
            #expect(dependentResult.status == .cancelled)
            #expect(dependentResult.cancellation?.reason == "dependency")
            // The unique job's lock is free again.
            #expect(
                try producer.enqueue(JobRequest(type: "echo", key: key, queue: other, uniqueFor: .seconds(1))).unique
                    == true)
        }

        @Test("purge of a queue that does not exist, or is none of jobs, is a usage error")
        func badQueues() throws {
            let url = try TestEnvironment.brokerURL
            let missing = TestEnvironment.uniqueName("no-such-queue")
            let absent = try CLI.run(["purge", missing, "--yes", "--url", url])
            #expect(absent.status == 64)
            #expect(absent.stderr.contains("there is no queue '\(missing)' on the broker"), "\(absent.stderr)")
            let own = try CLI.run(["purge", Topology.deadQueue, "--yes", "--url", url])
            #expect(own.status == 64)
            #expect(own.stderr.contains("'warren.dead' is one of Warren's own queues"), "\(own.stderr)")
        }
    }
}
