import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Recycling {
        /// How many times the worker's log says it started afresh.
        private func restarts(of worker: ChildProcess) -> Int {
            worker.stderr.components(separatedBy: "starting afresh\n").count - 1
        }

        private func openDescriptors(of worker: ChildProcess) -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(worker.process.processIdentifier)/fd"))?.count ?? -1
        }

        @Test("--max-jobs: after taking its last job the worker runs it, then starts afresh in the same process")
        func maxJobs() throws {
            let queue = TestEnvironment.uniqueName("recycle-jobs")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, id: "\(queue)-worker", arguments: ["--max-jobs", "3", "--width", "2"])
            defer { worker.terminate() }
            let descriptors = openDescriptors(of: worker)
            let producer = try Producer.forTests()
            let jobs = (1...8).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) }
            try producer.enqueue(jobs)
            let results = try tap.waitForResults(jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded && $0.workerID == "\(queue)-worker" })
            // Eight jobs, three per process: two fresh starts, and the third process took two jobs so far.
            #expect(restarts(of: worker) == 2, "\(worker.stderr)")
            #expect(worker.process.isRunning)
            try worker.waitForStderr(containing: "took the most jobs this worker may take")
            // Nothing piles up from one process to the next.
            #expect(openDescriptors(of: worker) <= descriptors, "descriptors open at start: \(descriptors)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(restarts(of: worker) == 2)
            #expect(try BrokerProbe.depth(of: queue) == 0)
        }

        @Test("--max-memory: past the limit, jobs not started go back, executing ones end whatever the grace, and the worker starts afresh")
        func maxMemory() throws {
            let queue = TestEnvironment.uniqueName("recycle-memory")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            // Any process is past 1 MiB: the worker starts afresh after every turn in which jobs ended.
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--max-memory", "1M", "--width", "2", "--prefetch", "3", "--grace", "0.2"])
            defer { worker.terminate() }
            #expect(worker.stderr.contains("resident memory is past the limit already"))
            let producer = try Producer.forTests()
            let long = JobRequest(type: "sleep", input: ["seconds": 1.5], queue: queue)
            let quick = JobRequest(type: "echo", input: "quick", queue: queue)
            try producer.enqueue([long, quick])
            try worker.waitForStart(of: quick.id)
            let later = JobRequest(type: "echo", input: "later", queue: queue)
            try producer.enqueue(later)
            let results = try tap.waitForResults([long.id, quick.id, later.id])
            // The long job was executing when the quick one ended: it ran to its end, far past the grace period.
            #expect(results.map(\.status) == [.succeeded, .succeeded, .succeeded], "\(results.map(\.error))")
            #expect(worker.stderr.contains("recycling: resident memory is past the limit"))
            #expect(restarts(of: worker) >= 1)
            #expect(worker.process.isRunning)
        }

        @Test("SIGTERM while a worker waits to start afresh stops it for good, exit 0")
        func stopWhileRetiring() throws {
            let queue = TestEnvironment.uniqueName("recycle-stop")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-jobs", "1", "--grace", "0.2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let job = JobRequest(type: "sleep", input: ["seconds": 60], queue: queue)
            try producer.enqueue(job)
            try worker.waitForStart(of: job.id)
            try worker.waitForStderr(containing: "took the most jobs this worker may take")
            let status = try CLI.run(["status", "--queue", queue, "--timeout", "1", "--url", try TestEnvironment.brokerURL])
            #expect(status.stdout.contains(" recycling=maxJobs\n"), "\(status.stdout)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(restarts(of: worker) == 0, "\(worker.stderr)")
            // Cancelled at the end of the grace period, and back in the broker for another worker.
            #expect(try BrokerProbe.depth(of: queue) == 1)
        }

        @Test("--max-jobs and --max-memory refuse values that cannot work, with exit 64")
        func badValues() throws {
            let url = try TestEnvironment.brokerURL
            for (arguments, message) in [
                (["--max-jobs", "0"], "--max-jobs 0: expected at least 1"),
                (["--max-memory", "512K"], "--max-memory: expected at least 1M"),
                (["--max-memory", "512"], "--max-memory"),
            ] {
                let output = try CLI.run(["worker", "--url", url] + arguments)
                #expect(output.status == 64, "\(arguments): \(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
            }
        }
    }
}
