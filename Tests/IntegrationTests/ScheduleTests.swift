import Foundation
import Testing
import Warren

/// Jobs that must not start before an instant (`notBefore`): they wait in the broker's delay queues, not in a
/// worker, and are cancelled like any job that is not delivered yet.
extension Integration {
    @Suite struct Schedules {
        @Test("a job scheduled ahead starts no sooner, and a job sent after it runs first, meanwhile")
        func startsNoSooner() throws {
            let queue = TestEnvironment.uniqueName("scheduled")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let notBefore = Date().addingTimeInterval(2.5)
            let later = try producer.enqueue(
                JobRequest(type: "echo", input: "later", queue: queue, notBefore: notBefore))
            #expect(later.notBefore == notBefore)
            let now = try producer.enqueue(JobRequest(type: "echo", input: "now", queue: queue))

            let results = try tap.waitForResults([now.id, later.id])
            #expect(results.map(\.status) == [.succeeded, .succeeded])
            let order = tap.messages.compactMap { try? JobResult.decode($0.body).jobID }
            #expect(order.filter { [now.id, later.id].contains($0) } == [now.id, later.id])
            let started = try #require(results.last?.timings.startedAt)
            #expect(started >= notBefore, "started \(started), not before \(notBefore)")
            #expect(results.last?.attempt == 1, "waiting is not an attempt")
            #expect(worker.stderr.contains("job not due yet"))
        }

        @Test("warren enqueue --delay: the job waits in a delay queue, and warren cancel ends it without running it")
        func cancelledWhileWaiting() throws {
            let queue = TestEnvironment.uniqueName("scheduled-cancel")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let enqueue = try CLI.run([
                "enqueue", "echo", "--url", try TestEnvironment.brokerURL, "--queue", queue, "--delay", "3s",
            ])
            let id = enqueue.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(enqueue.status == 0 && OperationDescriptor.problem(withID: id) == nil, "\(enqueue.stderr)")
            try worker.waitForStderr(containing: "job not due yet")
            // Logged before the copy is sent; and a quorum queue counts what it holds a moment later.
            let producer = try Producer.forTests()
            let deadline = ContinuousClock.now + .seconds(2)
            while try producer.jobQueueStatus(queue)?.delayed != 1, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(try producer.jobQueueStatus(queue)?.delayed == 1)
            try producer.cancel(jobIDs: [id])

            let result = try tap.waitForResult(id)
            #expect(result.status == .cancelled && result.cancellation?.reason == "requested")
            #expect(result.timings.startedAt == nil, "it never ran")
        }

        @Test("warren enqueue --delay --wait counts its --timeout from the job's time")
        func waitsFromTheJobsTime() throws {
            let queue = TestEnvironment.uniqueName("scheduled-wait")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let enqueue = try CLI.run([
                "enqueue", "echo", "--url", try TestEnvironment.brokerURL, "--queue", queue, "--input", #""soon""#,
                "--delay", "2", "--wait", "--timeout", "1",
            ])
            #expect(enqueue.status == 0, "\(enqueue.stdout)\(enqueue.stderr)")
            #expect(enqueue.stdout.contains(#"succeeded"#) && enqueue.stdout.contains(#"output="soon""#))
        }

        @Test("a graph's scheduled job holds back its dependents until it ran")
        func scheduledGraph() throws {
            let queue = TestEnvironment.uniqueName("scheduled-graph")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let file = try TestEnvironment.temporaryDirectory().appendingPathComponent("graph.json")
            try Data(
                #"""
                {"jobs": [{"name": "first", "type": "echo", "input": 1, "delay": 2},
                          {"name": "then", "type": "echo", "input": 2, "dependsOn": ["first"], "deadline": 60}]}
                """#.utf8
            ).write(to: file)
            let enqueue = try CLI.run([
                "enqueue", "--graph", file.path, "--url", try TestEnvironment.brokerURL, "--queue", queue, "--wait",
                "--json",
            ])
            #expect(enqueue.status == 0, "\(enqueue.stdout)\(enqueue.stderr)")
            let lines = enqueue.stdout.split(separator: "\n").map(String.init)
            let results = lines.compactMap { line in
                line.firstIndex(of: "{").flatMap { try? JobResult.decode(Array(line[$0...].utf8)) }
            }
            #expect(results.count == 2 && results.allSatisfy { $0.status == .succeeded }, "\(enqueue.stdout)")
            let first = try #require(results.first { $0.output == 1 }?.timings)
            let then = try #require(results.first { $0.output == 2 }?.timings)
            #expect(try #require(then.startedAt) >= #require(first.finishedAt))
        }

        @Test("warren enqueue --at puts the instant in the descriptor; --at with --delay is refused")
        func enqueueAt() throws {
            let queue = TestEnvironment.uniqueName("scheduled-at")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let enqueue = try CLI.run([
                "enqueue", "echo", "--url", url, "--queue", queue, "--at", "2099-01-02T03:04:05.5+01:00", "--json",
            ])
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
            let descriptor = try JobDecoder().decode(Array(enqueue.stdout.utf8), contentType: nil)
            // Printed to the millisecond, as the wire format writes it.
            #expect(descriptor.notBefore == Date(timeIntervalSince1970: 4_071_002_645.5))
            let both = try CLI.run([
                "enqueue", "echo", "--url", url, "--queue", queue, "--at", "2099-01-02T03:04:05Z", "--delay", "1",
            ])
            #expect(both.status == 64 && both.stderr.contains("give --delay or --at, not both"), "\(both.stderr)")
            let bad = try CLI.run(["enqueue", "echo", "--url", url, "--queue", queue, "--at", "tomorrow"])
            #expect(bad.status == 64 && bad.stderr.contains("--at"), "\(bad.stderr)")
        }

        @Test("a deadline that is not after notBefore is refused by the producer, and ended by a worker")
        func deadlineBeforeNotBefore() throws {
            let queue = TestEnvironment.uniqueName("scheduled-deadline")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let at = Date().addingTimeInterval(60)
            let error = #expect(throws: WarrenError.self) {
                try producer.enqueue(JobRequest(type: "echo", queue: queue, deadline: at, notBefore: at))
            }
            #expect(error?.code == .invalidConfiguration && error?.message.contains("could never start") == true)

            // Another client's job that says so: it ends at once, without waiting for its time.
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let descriptor = OperationDescriptor(
                type: "echo", sequence: 1, deadline: at.addingTimeInterval(-1), notBefore: at)
            try ForeignPublisher.publish(
                descriptor.encoded(), url: try TestEnvironment.brokerURL, routingKey: queue)
            let result = try tap.waitForResult(descriptor.id)
            #expect(result.status == .cancelled && result.cancellation?.reason == "deadline")
        }
    }
}
