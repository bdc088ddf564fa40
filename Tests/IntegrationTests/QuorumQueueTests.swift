import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    /// Quorum queues take no channel-wide prefetch: a worker that set one would lose its connection (540
    /// NOT_IMPLEMENTED) each time it tried to consume, and never take a job again.
    @Suite struct QuorumQueues {
        let quorumArguments: AMQPTable = [
            "x-dead-letter-exchange": .string(Topology.deadExchange), "x-queue-type": "quorum",
        ]

        @Test("--quorum-queues makes workers and producers create quorum queues (prefetch: PrefetchTests)")
        func created() throws {
            let queue = TestEnvironment.uniqueName("quorum")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--quorum-queues"])
            worker.terminate()
            #expect(try BrokerProbe.isDeclared(queue, with: quorumArguments))

            let made = TestEnvironment.uniqueName("quorum-produced")
            defer { BrokerProbe.delete(made) }
            try Producer.forTests(quorumQueues: true).enqueue(JobRequest(type: "echo", queue: made))
            #expect(try BrokerProbe.isDeclared(made, with: quorumArguments))
        }

        @Test("a classic job queue found under --quorum-queues is used as it is, and the producer and worker say so")
        func classicFound() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("quorum-classic")
            defer { BrokerProbe.delete(queue) }
            _ = try CLI.run(["enqueue", "echo", "--queue", queue, "--url", url])
            let enqueued = try CLI.run(["enqueue", "echo", "--queue", queue, "--quorum-queues", "--url", url])
            #expect(enqueued.status == 0, "\(enqueued.stderr)")
            #expect(
                enqueued.stderr.contains("warning: queue '\(queue)' is a classic queue, on one node"),
                "\(enqueued.stderr)")
            let worker = try CLI.startWorker(queue: queue, arguments: ["--quorum-queues"])
            defer { worker.terminate() }
            #expect(worker.stderr.contains("job queue is a classic queue, on one node"), "\(worker.stderr)")
            #expect(try BrokerProbe.isDeclared(queue, with: ["x-dead-letter-exchange": .string(Topology.deadExchange)]))
            // Made by another client: classic without arguments (told), quorum with arguments of its own (not told).
            let (plain, foreign) = (
                TestEnvironment.uniqueName("classic-plain"), TestEnvironment.uniqueName("quorum-foreign")
            )
            defer { [plain, foreign].forEach(BrokerProbe.delete) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            try connection.declareQueue(plain, channel: 1)
            try connection.declareQueue(
                foreign, arguments: ["x-queue-type": "quorum", "x-max-length": .int(100)], channel: 1)
            let told = try CLI.run(["enqueue", "echo", "--queue", plain, "--quorum-queues", "--url", url])
            #expect(told.stderr.contains("warning: queue '\(plain)' is a classic queue"), "\(told.stderr)")
            let made = TestEnvironment.uniqueName("quorum-made")
            defer { BrokerProbe.delete(made) }
            for queue in [made, foreign] {
                let quiet = try CLI.run(["enqueue", "echo", "--queue", queue, "--quorum-queues", "--url", url])
                #expect(quiet.status == 0 && !quiet.stderr.contains("classic"), "\(quiet.stderr)")
            }
        }

        @Test(
            "jobs waiting for dependencies on a quorum queue made by another client neither starve nor overfill a worker"
        )
        func parkedJobs() throws {
            let queue = TestEnvironment.uniqueName("quorum-deps")
            defer { BrokerProbe.delete(queue) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            // Not declared as Warren declares queues: the worker cannot tell its type, and must not risk a
            // channel-wide limit.
            _ = try connection.declareQueue(
                queue, arguments: ["x-queue-type": "quorum", "x-max-length": .int(10_000)], channel: 1)
            let root = UUID().uuidString.lowercased()
            let waiting = (1...6).map { _ in UUID().uuidString.lowercased() }
            for id in waiting {
                let body = #"{"version":1,"id":"\#(id)","type":"echo","dependencies":["\#(root)"]}"#
                try connection.publish(Array(body.utf8), exchange: "", routingKey: queue, channel: 1)
            }
            try connection.publish(
                Array(#"{"version":1,"id":"\#(root)","type":"echo"}"#.utf8), exchange: "", routingKey: queue, channel: 1
            )
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "1"])
            defer { worker.terminate() }
            let results = try tap.waitForResults([root] + waiting)
            #expect(results.allSatisfy { $0.status == .succeeded })

            // A parked job frees its place for one more job, and no more.
            let producer = try Producer.forTests()
            let blocker = JobRequest(type: "sleep", input: ["seconds": 60], queue: queue)
            var dependent = JobRequest(type: "echo", queue: queue, dependencies: [blocker.id])
            dependent.checksDependencies = false  // enqueued before its dependency, so that it arrives first
            let others = (1...3).map { _ in JobRequest(type: "echo", queue: queue) }
            try producer.enqueue([dependent])
            try producer.enqueue([blocker] + others)
            try worker.waitForStart(of: blocker.id)
            try BrokerProbe.expectReady(in: queue, 3, "one job parked, one executing")
            try producer.cancel(jobIDs: [blocker.id])
            let rest = try tap.waitForResults([blocker.id, dependent.id] + others.map(\.id))
            #expect(rest.map(\.status) == [.cancelled] + Array(repeating: .succeeded, count: 4))
            #expect(!worker.stderr.contains("reconnecting"), "\(worker.stderr)")
        }

        @Test("jobs parking on a quorum queue are never delivered twice (width 2, prefetch 2)")
        func parkingRedeliversNothing() throws {
            let queue = TestEnvironment.uniqueName("quorum-park")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--quorum-queues", "--width", "2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let gate = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 1], queue: queue))
            let dependents = try producer.enqueue(
                (1...100).map { _ in JobRequest(type: "echo", queue: queue, dependencies: [gate.id]) })
            let results = try tap.waitForResults(dependents.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded })
            let redelivered = results.filter { $0.redelivered || $0.attempt != 1 }
            #expect(redelivered.isEmpty, "a consumer was cancelled with deliveries on their way: \(redelivered.count)")
        }

        @Test("a worker of a classic and a quorum queue takes jobs from both, across dependencies")
        func mixedQueues() throws {
            let classic = TestEnvironment.uniqueName("quorum-mixed-classic")
            let quorum = TestEnvironment.uniqueName("quorum-mixed-quorum")
            defer { [classic, quorum].forEach(BrokerProbe.delete) }
            try Producer.forTests(quorumQueues: true).enqueue(JobRequest(type: "echo", input: "first", queue: quorum))
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: classic, arguments: ["--queue", quorum, "--width", "2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let slow = JobRequest(type: "sleep", input: ["seconds": 0.5], queue: quorum)
            let after = JobRequest(type: "echo", input: "after", queue: classic, dependencies: [slow.id])
            let jobs = try producer.enqueue(
                [after, slow] + (1...4).map { JobRequest(type: "echo", queue: $0 % 2 == 0 ? classic : quorum) })
            let results = try tap.waitForResults(jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded })
            #expect(try #require(results[0].timings.startedAt) >= (try #require(results[1].timings.finishedAt)))
            #expect(try BrokerProbe.isDeclared(quorum, with: quorumArguments), "the worker used the queue as it is")
            #expect(!worker.stderr.contains("reconnecting"), "\(worker.stderr)")
        }

        @Test(
            "workers make delay queues quorum queues, and use a classic one that exists as it is",
            arguments: [false, true])
        func delayQueues(classicExists: Bool) throws {
            let queue = TestEnvironment.uniqueName("quorum-delay")
            let delayQueue = Topology.delayQueue(for: queue, seconds: 1)
            defer { [queue, delayQueue].forEach(BrokerProbe.delete) }
            var arguments: AMQPTable = [
                "x-message-ttl": .int(1000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": .string(queue),
                "x-expires": .int(3_601_000),
            ]
            if classicExists {
                #expect(try BrokerProbe.isDeclared(delayQueue, with: arguments), "made as an earlier build made it")
            } else {
                arguments["x-expires"] = .int(604_801_000)
                arguments["x-queue-type"] = "quorum"
                arguments["x-dead-letter-strategy"] = "at-least-once"
                arguments["x-overflow"] = "reject-publish"
            }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            // 1.5 s ahead: a hop of 1 s, then one of 0.5 s, both through the 1 s delay queue.
            let scheduled = JobRequest(type: "echo", queue: queue, notBefore: Date(timeIntervalSinceNow: 1.5))
            let retried = JobRequest(type: "fail", input: ["retryable": true], queue: queue, maxAttempts: 2)
            try Producer.forTests().enqueue([scheduled, retried])
            let results = try tap.waitForResults([scheduled.id, retried.id])
            #expect(results.map(\.status) == [.succeeded, .failed])
            #expect(try #require(results[0].timings.startedAt) >= (try #require(scheduled.notBefore)))
            #expect(results[1].attempt == 2)
            #expect(try BrokerProbe.depth(of: delayQueue) == 0, "the delay queue exists")
            #expect(try BrokerProbe.isDeclared(delayQueue, with: arguments))
            #expect(!worker.stderr.contains("reconnecting"), "\(worker.stderr)")
        }

        @Test("quorum queues with priorities are refused: exit 64, or invalidConfiguration")
        func noPriorities() throws {
            let url = try TestEnvironment.brokerURL
            for command in [["worker"], ["enqueue", "echo"]] {
                let output = try CLI.run(command + ["--url", url, "--priority-queues", "--quorum-queues"])
                #expect(output.status == 64)
                #expect(output.stderr.contains("quorum queues have no priorities"), "\(output.stderr)")
            }
            #expect(throws: WarrenError.self) { try Producer(url: url, priorityQueues: true, quorumQueues: true) }
            var configuration = Worker.Configuration(url: url)
            configuration.priorityQueues = true
            configuration.quorumQueues = true
            #expect(throws: WarrenError.self) { try Worker(configuration: configuration, registry: .demo) }
        }
    }
}
