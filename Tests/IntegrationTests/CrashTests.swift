import Foundation
import Testing
import Warren

extension Integration {
    /// Jobs that kill their worker process: reported by the next worker started with the same state directory,
    /// run alone when they come back, dead-lettered once they killed `--max-crashes` workers.
    @Suite struct Crashes {
        private static func sleep(_ seconds: Double, queue: String) -> JobRequest {
            JobRequest(type: "sleep", input: ["seconds": .number(seconds)], queue: queue)
        }

        /// Enqueues two 1 s jobs, lets a worker of width 2 start both, runs `meanwhile` and kills the worker
        /// (kill -9); returns the jobs' ids.
        private static func jobsOfAKilledWorker(
            queue: String, state: [String: String], producer: Producer, meanwhile: () throws -> Void = {}
        ) throws -> [String] {
            let jobs = try [1, 2].map { _ in try producer.enqueue(sleep(1, queue: queue)).id }
            let doomed = try CLI.startWorker(queue: queue, arguments: ["--width", "2"], environment: state)
            defer { doomed.terminate() }
            for job in jobs { try doomed.waitForStart(of: job) }
            try meanwhile()
            doomed.signal(SIGKILL)
            doomed.waitForExit()
            return jobs
        }

        /// Whether a worker's log shows that job `id` ran alone.
        private static func ranAlone(_ id: String, in log: String) -> Bool {
            log.split(separator: "\n").contains { $0.contains("job=\(id)") && $0.contains("running the job alone") }
        }

        @Test(
            "a job that kills every worker it runs on is dead-lettered after --max-crashes deaths, with a failed result"
        )
        func crashLoop() throws {
            let queue = TestEnvironment.uniqueName("crashloop")
            defer { BrokerProbe.delete(queue) }
            let state = ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path]
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let job = try producer.enqueue(Self.sleep(600, queue: queue))
            let arguments = ["--max-crashes", "2"]

            let first = try CLI.startWorker(queue: queue, id: "first", arguments: arguments, environment: state)
            defer { first.terminate() }
            try first.waitForStart(of: job.id)
            first.signal(SIGKILL)
            first.waitForExit()

            let second = try CLI.startWorker(queue: queue, id: "second", arguments: arguments, environment: state)
            defer { second.terminate() }
            #expect(second.stderr.contains("a worker died while executing jobs; reporting them"))
            try second.waitForStart(of: job.id)
            #expect(second.stderr.contains("running the job alone"))
            second.signal(SIGKILL)
            second.waitForExit()

            let third = try CLI.startWorker(queue: queue, id: "third", arguments: arguments, environment: state)
            defer { third.terminate() }
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .failed)
            #expect(result.error?.code == "crashedWorker")
            #expect(
                result.error?.message
                    == "the job was executing in 2 worker processes when they died (first, second); it is not run "
                    + "again (at most 2)")
            #expect(result.workerID == "third")
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == job.id } }
            let letter = try #require(dead.messages.first { $0.properties.messageID == job.id })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "crashedWorker")
            #expect(!third.logsStart(of: job.id))
            #expect(try BrokerProbe.depth(of: queue) == 0)

            // Requeued (once its bug is fixed, say), it runs again: the deaths before count no more.
            let requeue = try CLI.run(["dead", "requeue", job.id, "--url", try TestEnvironment.brokerURL])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            try third.waitForStart(of: job.id)
            #expect(third.stderr.split(separator: "\n").filter { $0.contains("running the job alone") }.isEmpty)
            _ = try CLI.run(["cancel", job.id, "--url", try TestEnvironment.brokerURL])
            try tap.read(timeout: .seconds(30)) { _ in tap.results(for: job.id).count == 2 }
            #expect(tap.results(for: job.id).last?.status == .cancelled)
            // A worker that stops removes its journal, and those it reported.
            third.signal(SIGTERM)
            #expect(third.waitForExit() == 0)
            let journals = try FileManager.default.contentsOfDirectory(atPath: state["WARREN_STATE_DIR"]! + "/workers")
            #expect(journals.isEmpty, "\(journals)")
        }

        @Test(
            "a live worker beside one that died finds its journal when the jobs come back: only a death alone condemns a job"
        )
        func liveNeighbourAndInnocentJobs() throws {
            let queue = TestEnvironment.uniqueName("neighbour")
            defer { BrokerProbe.delete(queue) }
            let state = ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path]
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let arguments = ["--width", "2", "--max-crashes", "1"]
            let poison = try producer.enqueue(Self.sleep(600, queue: queue))
            let innocent = try producer.enqueue(Self.sleep(0.5, queue: queue))

            let first = try CLI.startWorker(queue: queue, id: "first", arguments: arguments, environment: state)
            defer { first.terminate() }
            for job in [poison, innocent] { try first.waitForStart(of: job.id) }
            let neighbour = try CLI.startWorker(queue: queue, id: "neighbour", arguments: arguments, environment: state)
            defer { neighbour.terminate() }
            first.signal(SIGKILL)
            first.waitForExit()

            // Both were executing when `first` died: neither is condemned by a death it shared; each runs alone.
            try neighbour.waitForStderr(containing: "a worker died while executing jobs; reporting them")
            try neighbour.waitForStart(of: poison.id)
            #expect(neighbour.stderr.contains("running the job alone"))
            #expect(!neighbour.logsStart(of: innocent.id), "the innocent job waits for the suspect running alone")
            neighbour.signal(SIGKILL)
            neighbour.waitForExit()

            let last = try CLI.startWorker(queue: queue, id: "last", arguments: arguments, environment: state)
            defer { last.terminate() }
            let results = try tap.waitForResults([poison.id, innocent.id])
            #expect(results[0].status == .failed)
            #expect(
                results[0].error?.message
                    == "the job was executing in 2 worker processes when they died (first, neighbour); it is not run "
                    + "again (at most 1)")
            #expect(results[1].status == .succeeded)
            #expect(results[1].workerID == "last")
        }

        @Test("every neighbour of a dead worker that gets one of its jobs runs it alone, whichever of them reports it")
        func severalNeighbours() throws {
            let queue = TestEnvironment.uniqueName("neighbours")
            defer { BrokerProbe.delete(queue) }
            let state = ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path]
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            var neighbours: [ChildProcess] = []
            defer { neighbours.forEach { $0.terminate() } }
            let suspects = try Self.jobsOfAKilledWorker(queue: queue, state: state, producer: producer) {
                neighbours = try [1, 2].map { _ in
                    try CLI.startWorker(
                        queue: queue, arguments: ["--width", "2", "--prefetch", "1"], environment: state)
                }
            }

            let results = try tap.waitForResults(suspects)
            #expect(results.allSatisfy { $0.status == .succeeded })
            let logs = neighbours.map(\.stderr).joined(separator: "\n")
            for job in suspects { #expect(Self.ranAlone(job, in: logs), "\(job) ran alone:\n\(logs)") }
        }

        @Test("a report from any AMQP client naming a job a worker holds, not started, sends it back to run alone")
        func reportForAHeldJob() throws {
            let queue = TestEnvironment.uniqueName("heldsuspect")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "2"])
            defer { worker.terminate() }
            let long = try producer.enqueue(Self.sleep(1, queue: queue))
            let held = try producer.enqueue(JobRequest(type: "echo", input: "later", queue: queue))
            try worker.waitForStart(of: long.id)

            let report =
                #"{"version":1,"kind":"crashed","jobIds":["\#(held.id)"],"token":"\#(UUID().uuidString)","#
                + #""worker":"elsewhere","sentAt":"\#(ISO8601DateFormatter().string(from: Date()))"}"#
            try ForeignPublisher.publish(
                Array(report.utf8), url: try TestEnvironment.brokerURL, exchange: Topology.controlExchange,
                routingKey: "")
            let results = try tap.waitForResults([long.id, held.id])
            #expect(results.map(\.status) == [.succeeded, .succeeded])
            #expect(results[1].redelivered, "it went back to the broker and came back")
            #expect(try #require(results[1].timings.startedAt) >= (try #require(results[0].timings.finishedAt)))
            #expect(worker.stderr.contains("sending the job back to the broker, to run alone"))
            #expect(Self.ranAlone(held.id, in: worker.stderr))
        }

        @Test("jobs executing when their worker died run one at a time when they come back; the others wait for them")
        func suspectsRunAlone() throws {
            let queue = TestEnvironment.uniqueName("alone")
            defer { BrokerProbe.delete(queue) }
            let state = ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path]
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let suspects = try Self.jobsOfAKilledWorker(queue: queue, state: state, producer: producer)
            let others = try [1, 2].map { _ in try producer.enqueue(Self.sleep(0.5, queue: queue)) }

            let survivor = try CLI.startWorker(
                queue: queue, arguments: ["--width", "2", "--prefetch", "4"], environment: state)
            defer { survivor.terminate() }
            let results = try tap.waitForResults(suspects + others.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded })
            #expect(results.map(\.attempt) == [2, 2, 1, 1])
            let spans = try results.map { result in
                (try #require(result.timings.startedAt), try #require(result.timings.finishedAt))
            }
            // Each suspect ran with nothing beside it; the other two ran after them, side by side.
            for (index, suspect) in spans.prefix(2).enumerated() {
                for (otherIndex, other) in spans.enumerated() where otherIndex != index {
                    #expect(
                        other.1 <= suspect.0 || other.0 >= suspect.1, "job \(otherIndex) overlapped suspect \(index)")
                }
            }
            #expect(spans[2].0 < spans[3].1 && spans[3].0 < spans[2].1, "the others ran in parallel again")
        }

        @Test("a worker killed while it stops (SIGTERM, then SIGKILL before its grace ended) is not reported")
        func killedWhileStopping() throws {
            let queue = TestEnvironment.uniqueName("stopkill")
            defer { BrokerProbe.delete(queue) }
            let state = ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path]
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let job = try producer.enqueue(Self.sleep(3, queue: queue))

            let stopping = try CLI.startWorker(queue: queue, environment: state)
            defer { stopping.terminate() }
            try stopping.waitForStart(of: job.id)
            stopping.signal(SIGTERM)
            try stopping.waitForStderr(containing: "stopping: no new jobs")
            stopping.signal(SIGKILL)
            stopping.waitForExit()

            let next = try CLI.startWorker(queue: queue, environment: state)
            defer { next.terminate() }
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .succeeded)
            #expect(!next.stderr.contains("a worker died"))
            #expect(!next.stderr.contains("running the job alone"))
        }
    }
}
