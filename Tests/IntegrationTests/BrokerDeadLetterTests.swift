import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct BrokerDeadLetters {
        @Test("a job the broker dead-letters itself gets a failed result from a worker; its dependent runs")
        func expiredJobGetsAResult() throws {
            let queue = TestEnvironment.uniqueName("broker-dead")
            let expiring = TestEnvironment.uniqueName("broker-dead-expiring")
            defer {
                BrokerProbe.delete(queue)
                BrokerProbe.delete(expiring)
            }
            let tap = try MessageTap.results()
            let workerID = TestEnvironment.uniqueName("worker")
            let worker = try CLI.startWorker(queue: queue, id: workerID)
            defer { worker.terminate() }
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            // On a queue no worker consumes, so that only the broker can end it: it expires at once.
            let (id, _) = try Retries.expiredJob(in: expiring, on: connection)
            var dependent = JobRequest(type: "echo", input: "after", queue: queue, dependencies: [id])
            dependent.checksDependencies = false
            let producer = try Producer.forTests()
            defer { producer.close() }
            try producer.enqueue(dependent)
            // A job a worker dead-letters has its result already: the copy of its letter adds none.
            let unknown = try producer.enqueue(JobRequest(type: "no-such-type", queue: queue))

            let result = try tap.waitForResult(id)
            #expect(result.status == .failed)
            #expect(result.error?.code == "brokerDeadLettered")
            #expect(
                result.error?.message.contains("from queue '\(expiring)'") == true
                    && result.error?.message.contains("x-death reason 'expired'") == true,
                "\(result.error?.message ?? "")")
            #expect(result.workerID == workerID)
            #expect(result.type == "echo")
            #expect(try tap.waitForResult(dependent.id).status == .succeeded)
            #expect(try tap.waitForResult(unknown.id).error?.code == "unknownType")
            try tap.settle(for: .seconds(2))
            #expect(tap.results(for: id).count == 1)
            #expect(tap.results(for: unknown.id).count == 1)
            // The letter stays, for dead list and dead requeue.
            let list = try CLI.run(["dead", "list", "--url", url])
            #expect(list.stdout.contains("\(id) reason=expired queue=\(expiring)"), "\(list.stdout)")
            #expect(worker.stderr.contains("the broker dead-lettered a job; publishing its failed result"))
        }

        @Test("a message the broker dead-letters from one of Warren's own queues gets no result: it is no job")
        func ownQueueLetterGetsNoResult() throws {
            let queue = TestEnvironment.uniqueName("broker-dead-own")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let tap = try MessageTap.results()
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(2)  // channel 1 is the expired job's (Retries.expiredJob)
            // What a catch-all dead-letter-exchange policy makes of a unique job's expired lock token: its
            // message_id is the id of the job that held it.
            let holder = TestEnvironment.uniqueName("holder")
            let death: AMQPFieldValue = .array([
                .table(["reason": "expired", "queue": .string(UniqueLock.prefix + "some-key"), "count": .int(1)])
            ])
            try connection.publish(
                Array("lock".utf8), exchange: Topology.deadExchange, routingKey: "",
                properties: MessageProperties(headers: ["x-death": death], messageID: holder), channel: 2)
            // A job the broker dead-lettered from a job queue, after it: answered, so the token's copy was handled.
            let expiring = TestEnvironment.uniqueName("broker-dead-expiring")
            defer { BrokerProbe.delete(expiring) }
            let (job, _) = try Retries.expiredJob(in: expiring, on: connection)
            #expect(try tap.waitForResult(job).error?.code == "brokerDeadLettered")
            try tap.settle(for: .seconds(1))
            #expect(tap.results(for: holder).isEmpty, "no result for a lock token")
            #expect(try BrokerProbe.depth(of: Topology.deadWatchQueue) == 0, "its copy was acknowledged")
        }

        @Test("dead requeue takes the letters' copies: a job that expired while no worker ran runs, and only succeeds")
        func requeueTakesTheCopies() throws {
            let queue = TestEnvironment.uniqueName("broker-dead-requeue")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            // No worker runs: the letter's copy waits in warren.dead.watch.
            let (id, _) = try Retries.expiredJob(in: queue, on: connection, copied: true)
            let requeue = try CLI.run(["dead", "requeue", id, "--url", url])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            #expect(!requeue.stderr.contains("copies"), "\(requeue.stderr)")

            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            #expect(try tap.waitForResult(id).status == .succeeded)
            try tap.settle(for: .seconds(1))
            #expect(tap.results(for: id).map(\.status) == [.succeeded], "no brokerDeadLettered failure before it")
        }

        @Test("a worker whose queue of dead letters' copies is deleted goes on, connected; it is made again")
        func watchQueueDeleted() throws {
            let queue = TestEnvironment.uniqueName("broker-dead-deleted")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            BrokerProbe.delete(Topology.deadWatchQueue)
            try worker.waitForStderr(containing: "the broker cancelled the consumer of dead letters' copies")
            let tap = try MessageTap.results()
            let job = try Producer.forTests().enqueue(JobRequest(type: "echo", input: 1, queue: queue))
            #expect(try tap.waitForResult(job.id).status == .succeeded)
            #expect(!worker.stderr.contains("lost the broker"), "the worker kept its connection")
            // The next worker makes it again.
            let next = try CLI.startWorker(queue: queue)
            defer { next.terminate() }
            #expect(try BrokerProbe.depth(of: Topology.deadWatchQueue) == 0)
        }
    }
}
