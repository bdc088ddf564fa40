import Foundation
import Testing
import Warren

/// A three-node RabbitMQ cluster of the test's own (`scripts/broker start --join`), and a node of it lost.
extension Integration {
    @Suite struct Cluster {
        static let brokerScript = TestEnvironment.packageRoot.appendingPathComponent("scripts/broker")

        /// Runs `scripts/broker ARGUMENTS` and expects it to succeed.
        static func broker(_ arguments: [String]) throws {
            let child = try ChildProcess(brokerScript, arguments, name: "broker \(arguments[0])")
            #expect(child.waitForExit(timeout: .seconds(120)) == 0, "\(child.stderr)")
        }

        /// Runs `body` until it stops throwing, for at most `timeout`: a quorum queue refuses publishes for a
        /// moment while it elects a leader.
        static func eventually<T>(timeout: Duration = .seconds(20), _ body: () throws -> T) throws -> T {
            let deadline = ContinuousClock.now + timeout
            while true {
                do {
                    return try body()
                } catch  where ContinuousClock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.5)
                }
            }
        }

        @Test("a lost node: quorum queues go on, a classic queue and the dead letters wait for it, nothing is lost")
        func nodeLost() throws {
            let directory = try TestEnvironment.temporaryDirectory()
            let nodes = ["n1", "n2", "n3"].map { directory.appendingPathComponent($0).path }
            try Self.broker(["start", nodes[0]])
            defer { nodes.reversed().forEach { try? Self.broker(["stop", $0]) } }
            try Self.broker(["start", "--join", nodes[0], nodes[1]])
            try Self.broker(["start", "--join", nodes[0], nodes[2]])
            let urls = try nodes.map {
                try String(contentsOfFile: $0 + "/url", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }

            // Made through n1: warren.dead and the classic queue live there; the quorum queue on all three.
            let classic = TestEnvironment.uniqueName("cluster-classic")
            let quorum = TestEnvironment.uniqueName("cluster-quorum")
            try Producer.forTests(url: urls[0]).enqueue(JobRequest(type: "echo", input: "before", queue: classic))
            try Producer.forTests(url: urls[0], quorumQueues: true).enqueue(JobRequest(type: "echo", queue: quorum))
            // A unique job whose lock lives on n1 (its producer's node) and which ends while n1 is down.
            let locked = TestEnvironment.uniqueName("cluster-locked")
            let stay = try ChildProcess(
                TestEnvironment.warrenBinary,
                [
                    "worker", "--url", "\(urls[1]),\(urls[2])", "--queue", classic, "--queue", quorum, "--queue",
                    locked,
                    "--worker-id", "stay", "--log-level", "debug", "--quorum-queues",
                ],
                name: "worker on n2")
            defer { stay.terminate() }
            let move = try ChildProcess(
                TestEnvironment.warrenBinary,
                ["worker", "--url", urls.joined(separator: ","), "--queue", quorum, "--worker-id", "move"],
                name: "worker on n1")
            defer { move.terminate() }
            try stay.waitForStderr(containing: "worker started")
            try move.waitForStderr(containing: "worker started")
            let key = TestEnvironment.uniqueName("cluster-key")
            let unique = try Producer.forTests(url: urls[0], quorumQueues: true).enqueue(
                JobRequest(type: "sleep", input: ["seconds": 4], key: key, queue: locked, uniqueFor: .seconds(600)))
            try stay.waitForStart(of: unique.id)

            // At start-up a worker may reconnect once: a stream just made on a fresh cluster has no replica on every
            // node for a moment. What counts is that it keeps its connection once n1 is gone.
            let startUp = stay.stderr.count
            try Self.broker(["ctl", nodes[0], "stop_app"])
            let producer = try Producer.forTests(url: urls[2])
            for number in 1...4 {
                let job = try Self.eventually {
                    try producer.enqueue(
                        JobRequest(type: "echo", input: .number(Double(number)), queue: quorum), watch: true)
                }
                #expect(try producer.waitForResult(of: job.id, timeout: .seconds(30)).status == .succeeded)
            }
            try move.waitForStderr(containing: "reconnected")
            try stay.waitForStderr(containing: "the broker cancelled the consumer of a job queue")
            #expect(
                !stay.stderr.dropFirst(startUp).contains("lost the broker"), "its own node stayed up: \(stay.stderr)")

            // Failed jobs are held until their dead letters can be stored, not acknowledged with the letters lost;
            // more of them than the workers' prefetch (2 each) do not keep the workers from other jobs.
            let failing = try producer.enqueue(
                (1...5).map { _ in JobRequest(type: "fail", queue: quorum) }, watch: true)
            #expect(throws: WarrenError.self) { try producer.waitForResult(of: failing[0].id, timeout: .seconds(3)) }
            #expect((stay.stderr + move.stderr).contains("holding jobs to dead-letter"))
            let meanwhile = try producer.enqueue(JobRequest(type: "echo", queue: quorum), watch: true)
            #expect(try producer.waitForResult(of: meanwhile.id, timeout: .seconds(30)).status == .succeeded)
            let status = try CLI.run(["status", "--url", urls[2], "--queue", classic, "--timeout", "0.5"])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("queue \(classic): unreachable: "), "\(status.stdout)")
            #expect(status.stdout.contains("dead letters: unreachable: "), "\(status.stdout)")
            let refused = try CLI.run(["enqueue", "echo", "--url", urls[2], "--queue", classic])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("is down or inaccessible"), "\(refused.stderr)")

            try stay.waitForStderr(containing: "cannot release the job's unique lock yet", timeout: .seconds(30))
            try Self.broker(["ctl", nodes[0], "start_app"])
            // Released once n1 is back, not held for the rest of its 10 minutes.
            try stay.waitForStderr(containing: "the unique lock that was out of reach when its job ended is dealt with")
            #expect(stay.stderr.contains("outcome=released"), "\(stay.stderr)")
            #expect(throws: Never.self) {
                try Producer.forTests(url: urls[2]).enqueue(
                    JobRequest(type: "echo", key: key, queue: locked, uniqueFor: .seconds(600)))
            }
            for job in failing {
                #expect(try producer.waitForResult(of: job.id, timeout: .seconds(60)).status == .failed)
            }
            let letters = try Self.eventually { try DeadLetterQueue(url: urls[2]).list() }
            #expect(Set(letters.compactMap(\.jobID)) == Set(failing.map(\.id)))
            #expect(letters.count == failing.count)
            let after = try Self.eventually {
                try producer.enqueue(JobRequest(type: "echo", input: "after", queue: classic), watch: true)
            }
            let result = try producer.waitForResult(of: after.id, timeout: .seconds(30))
            #expect(result.status == .succeeded)
            #expect(result.workerID == "stay", "the worker took jobs from the classic queue again")
            #expect(stay.process.isRunning && move.process.isRunning)
        }
    }
}
