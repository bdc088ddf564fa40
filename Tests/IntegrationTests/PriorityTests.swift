import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Priorities {
        let priorities: [JobPriority] = [.normal, .veryLow, .veryHigh, .low, .high]

        /// The order in which a worker of width 1 and prefetch 1 (and `workerArguments`) runs jobs of each priority,
        /// enqueued before it starts by a producer that creates the queue, with `priorityQueues` or not.
        func brokerOrder(priorityQueues: Bool, workerArguments: [String] = []) throws -> [String?] {
            let queue = TestEnvironment.uniqueName("priority-broker")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests(priorityQueues: priorityQueues)
            let tap = try MessageTap.results()
            let jobs = try producer.enqueue(
                priorities.map { JobRequest(type: "echo", input: .string($0.rawValue), priority: $0, queue: queue) })
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--width", "1", "--prefetch", "1"] + workerArguments)
            defer { worker.terminate() }
            _ = try tap.waitForResults(jobs.map(\.id))
            return tap.arrivedResults.filter { r in jobs.contains { $0.id == r.jobID } }.map { $0.output?.stringValue }
        }

        @Test("a priority queue delivers waiting jobs highest priority first, to a worker that did not ask for one")
        func priorityQueueOrder() throws {
            #expect(try brokerOrder(priorityQueues: true) == ["veryHigh", "high", "normal", "low", "veryLow"])
        }

        @Test("a queue created without priorities delivers first in, first out, to a worker that asks for them")
        func plainQueueOrder() throws {
            let order = try brokerOrder(priorityQueues: false, workerArguments: ["--priority-queues"])
            #expect(order == priorities.map(\.rawValue))
        }

        @Test("a worker creates its missing queue as a priority queue with --priority-queues, else first in, first out")
        func workerCreatesQueue() throws {
            let deadLetters: AMQPTable = ["x-dead-letter-exchange": .string(Topology.deadExchange)]
            var withPriorities = deadLetters
            withPriorities["x-max-priority"] = .int(Topology.maxPriority)
            for priorityQueues in [true, false] {
                let queue = TestEnvironment.uniqueName("priority-created")
                defer { BrokerProbe.delete(queue) }
                let worker = try CLI.startWorker(queue: queue, arguments: priorityQueues ? ["--priority-queues"] : [])
                worker.terminate()
                #expect(try BrokerProbe.isDeclared(queue, with: priorityQueues ? withPriorities : deadLetters))
            }
        }

        @Test("warren enqueue warns when a job's priority meets a first-in-first-out queue, and only then")
        func warnsOfPlainQueue() throws {
            let url = try TestEnvironment.brokerURL
            let plain = TestEnvironment.uniqueName("priority-plain")
            let ordered = TestEnvironment.uniqueName("priority-ordered")
            defer { [plain, ordered].forEach(BrokerProbe.delete) }
            func enqueue(_ arguments: [String]) throws -> String {
                let output = try CLI.run(["enqueue", "echo", "--url", url] + arguments)
                #expect(output.status == 0, "\(output.stderr)")
                return output.stderr
            }
            let warning = "queue '\(plain)' is first in, first out"
            #expect(try enqueue(["--queue", plain, "--priority", "high"]).contains(warning))
            #expect(!(try enqueue(["--queue", plain])).contains("warning"), "a normal priority needs no warning")
            #expect(
                try enqueue(["--queue", plain, "--priority", "low", "--priority-queues"]).contains(warning),
                "an existing queue stays as it is")
            #expect(
                !(try enqueue(["--queue", ordered, "--priority", "high", "--priority-queues"])).contains("warning"))

            let producer = try Producer.forTests()
            #expect(try producer.deliversByPriority(ordered))
            #expect(try !producer.deliversByPriority(plain))
            let missing = TestEnvironment.uniqueName("priority-missing")
            #expect(try !producer.deliversByPriority(missing))
            #expect(try producer.jobQueueStatus(missing) == nil, "looking does not create the queue")
        }

        @Test("a worker's local queue starts ready operations highest priority first (width 1, prefetch 10)")
        func localOrder() throws {
            let queue = TestEnvironment.uniqueName("priority-local")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "10"])
            defer { worker.terminate() }
            // Occupy the only slot, so the others wait in the local queue, delivered in publish order.
            let blocker = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 1.5], queue: queue))
            try worker.waitForStart(of: blocker.id)
            let jobs = try producer.enqueue(
                priorities.map { JobRequest(type: "echo", input: .string($0.rawValue), priority: $0, queue: queue) })
            _ = try tap.waitForResults([blocker.id] + jobs.map(\.id))
            let order = tap.arrivedResults.filter { r in jobs.contains { $0.id == r.jobID } }.map {
                $0.output?.stringValue
            }
            #expect(order == ["veryHigh", "high", "normal", "low", "veryLow"])
        }

        @Test("a job its dependency releases starts before a lower-priority job that waited, as in an OperationQueue")
        func releasedDependentFirst() throws {
            let queue = TestEnvironment.uniqueName("priority-released")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "6"])
            defer { worker.terminate() }
            let blocker = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 0.5], queue: queue))
            try worker.waitForStart(of: blocker.id)
            let low = try producer.enqueue(JobRequest(type: "echo", input: "low", priority: .veryLow, queue: queue))
            let high = try producer.enqueue(
                JobRequest(type: "echo", input: "high", priority: .veryHigh, queue: queue, dependencies: [blocker.id]))
            let results = try tap.waitForResults([blocker.id, low.id, high.id])
            #expect(results.allSatisfy { $0.status == .succeeded })
            let order = tap.arrivedResults.filter { [low.id, high.id].contains($0.jobID) }.map(\.jobID)
            #expect(order == [high.id, low.id], "the veryLow job took the slot the veryHigh one was released for")
        }
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
