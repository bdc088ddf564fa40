import AMQP
import Foundation
import Testing
import Warren

/// A broker that blocks publishers (a memory alarm) reads nothing from a connection that published: no broker call
/// on it is answered and no publish confirmed until the alarm clears. Workers and schedulers still stop when told,
/// and broker calls give up.
extension Integration {
    @Suite struct BlockedBroker {
        /// Raises the broker's memory alarm for the time of `body`.
        static func withMemoryAlarm<T>(_ body: () throws -> T) throws -> T {
            try Chaos.brokerCtl(["set_vm_memory_high_watermark", "0.00001"])
            defer { try? Chaos.brokerCtl(["set_vm_memory_high_watermark", "0.4"]) }
            return try body()
        }

        @Test("a worker the broker blocks stops on SIGTERM, leaving what the broker has not confirmed to it")
        func workerStops() throws {
            let queue = TestEnvironment.uniqueName("blocked-stop")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2", "--grace", "1"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            // Long enough to end after the alarm is on, however long rabbitmqctl takes to start on a loaded machine.
            let short = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 10], queue: queue))
            let long = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 60], queue: queue))
            try worker.waitForStart(of: short.id)
            try worker.waitForStart(of: long.id)
            try Self.withMemoryAlarm {
                // The short job's result is what makes the broker block the worker's connection.
                try worker.waitForStderr(containing: "the broker blocked this connection")
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(timeout: .seconds(60)) == 0, "\(worker.stderr.suffix(2000))")
            }
            #expect(worker.stderr.contains("stopping: no new jobs"))
            #expect(worker.stderr.contains("leaving results and acks the broker has not confirmed"))
            try producer.cancel(jobIDs: [long.id])
        }

        @Test("enqueue that loses its connection before its jobs are confirmed names them, as they may be enqueued")
        func enqueueLosesItsConnection() throws {
            let queue = TestEnvironment.uniqueName("blocked-enqueue")
            defer { BrokerProbe.delete(queue) }
            let graph = try TestEnvironment.temporaryDirectory().appendingPathComponent("graph.json")
            try Data(
                #"{"jobs":[{"name":"first","type":"echo"},{"name":"then","type":"echo","dependsOn":["first"]}]}"#.utf8
            )
            .write(to: graph)
            let output = try Self.withMemoryAlarm {
                let enqueue = try ChildProcess(
                    TestEnvironment.warrenBinary,
                    ["enqueue", "--graph", graph.path, "--queue", queue, "--url", try TestEnvironment.brokerURL],
                    name: "enqueue")
                defer { enqueue.terminate() }
                // Its publishes wait for confirms the blocked broker does not send; then the connection goes.
                Thread.sleep(forTimeInterval: 2)
                try Chaos.closeConnections(
                    named: "warren producer \(enqueue.process.processIdentifier)", reason: "test: lost while enqueueing"
                )
                return (enqueue.waitForExit(timeout: .seconds(40)), enqueue.stdout, enqueue.stderr)
            }
            #expect(output.0 == 1, "\(output.2)")
            let lines = output.1.split(separator: "\n")
            #expect(lines.count == 2 && lines[0].hasPrefix("first ") && lines[1].hasPrefix("then "), "\(output.1)")
            #expect(output.2.contains("may be enqueued all the same"), "\(output.2)")
            #expect(output.2.contains("the ids of the unconfirmed jobs are on standard output"), "\(output.2)")
        }

        @Test("warren status while the broker blocks publishers shows the queues, and says the workers are unknown")
        func statusUnderAnAlarm() throws {
            let queue = TestEnvironment.uniqueName("blocked-status")
            defer { BrokerProbe.delete(queue) }
            try Producer.forTests().enqueue(JobRequest(type: "echo", queue: queue))
            let output = try Self.withMemoryAlarm {
                try CLI.run(["status", "--timeout", "1", "--queue", queue, "--url", try TestEnvironment.brokerURL])
            }
            #expect(output.status == 1, "\(output.stderr)")
            #expect(output.stdout.contains("queue \(queue) waiting=1"), "\(output.stdout)")
            #expect(output.stdout.contains("dead letters="), "\(output.stdout)")
            #expect(
                output.stderr.contains("workers unknown: the broker did not take the status request"),
                "\(output.stderr)")
        }

        @Test("a worker that starts while the broker blocks publishers stops on SIGTERM, not after its setup's waits")
        func workerStartingStops() throws {
            let queue = TestEnvironment.uniqueName("blocked-start")
            defer { BrokerProbe.delete(queue) }
            // A status request of a moment ago, which the worker answers as it reads the control stream at start-up.
            let status = try CLI.run(["status", "--timeout", "0.5", "--url", try TestEnvironment.brokerURL])
            #expect(status.status == 0, "\(status.stderr)")
            try Self.withMemoryAlarm {
                let worker = try ChildProcess(
                    TestEnvironment.warrenBinary,
                    ["worker", "--queue", queue, "--url", try TestEnvironment.brokerURL], name: "worker")
                defer { worker.terminate() }
                // Its marker in the control stream waits for a confirm the blocked broker does not send.
                Thread.sleep(forTimeInterval: 2)
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(timeout: .seconds(25)) == 0, "\(worker.stderr)")
                #expect(!worker.stderr.contains("did not read the control stream"), "\(worker.stderr)")
            }
        }

        @Test("a scheduler that starts while the broker blocks publishers stops on SIGTERM")
        func schedulerStops() throws {
            let directory = try TestEnvironment.temporaryDirectory()
            let file = directory.appendingPathComponent("schedule.json")
            let queue = TestEnvironment.uniqueName("blocked-schedule")
            defer { BrokerProbe.delete(queue) }
            let schedule =
                #"{"schedules": [{"name": "\#(queue)", "every": "5s", "type": "echo", "queue": "\#(queue)"}]}"#
            try Data(schedule.utf8).write(to: file)
            try Self.withMemoryAlarm {
                let scheduler = try ChildProcess(
                    TestEnvironment.warrenBinary, ["schedule", file.path, "--url", try TestEnvironment.brokerURL],
                    name: "scheduler")
                defer { scheduler.terminate() }
                // Its first publish, the state, waits for a confirm the blocked broker does not send.
                Thread.sleep(forTimeInterval: 2)
                scheduler.signal(SIGTERM)
                #expect(scheduler.waitForExit(timeout: .seconds(40)) == 0, "\(scheduler.stderr)")
                #expect(scheduler.stderr.contains("scheduler stopping"), "\(scheduler.stderr)")
                #expect(!scheduler.stderr.contains("reconnecting"), "\(scheduler.stderr)")
            }
        }

        @Test("a broker call on a connection the broker blocks gives up after its time limit: the connection is lost")
        func brokerCallGivesUp() throws {
            var configuration = try AMQPConfiguration(url: TestEnvironment.brokerURL)
            configuration.rpcTimeout = .seconds(2)
            let connection = try AMQPConnection(configuration: configuration)
            defer { connection.close() }
            try connection.openChannel(1)
            let queue = TestEnvironment.uniqueName("blocked-call")
            defer { BrokerProbe.delete(queue) }
            try connection.declareQueue(queue, channel: 1)
            try Self.withMemoryAlarm {
                try connection.publish(Array("x".utf8), exchange: "", routingKey: queue, channel: 1)
                connection.flushOutput()
                var blocked = false
                let until = ContinuousClock.now + .seconds(30)
                while !blocked, ContinuousClock.now < until {
                    _ = connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(200))
                    while let event = try connection.nextEvent() {
                        if case .blocked = event { blocked = true }
                    }
                }
                #expect(blocked)
                let error = #expect(throws: AMQPError.self) { try connection.declareQueue(queue + "-2", channel: 1) }
                #expect(error?.code == .connectionLost)
                #expect(
                    error?.message.contains("no answer from the broker within 2") == true, "\(error?.message ?? "")")
            }
        }
    }
}
