import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Recycling {
        /// How many times the worker's log says it started afresh.
        private func restarts(of worker: ChildProcess) -> Int {
            worker.stderr.components(separatedBy: "starting afresh\n").count - 1
        }

        /// Waits until the worker started afresh `count` times and settled (its connection and journal open).
        private func waitUntil(_ worker: ChildProcess, restarted count: Int) throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while worker.stderr.components(separatedBy: "worker started\n").count - 1 < count + 1 {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the worker did not start afresh \(count) times: \(worker.stderr)")
                    throw ChildProcessError.timeout
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            Thread.sleep(forTimeInterval: 0.3)
        }

        private func openDescriptors(of worker: ChildProcess) -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(worker.process.processIdentifier)/fd"))?
                .count ?? -1
        }

        @Test("--max-jobs: after taking its last job the worker runs it, then starts afresh in the same process")
        func maxJobs() throws {
            let queue = TestEnvironment.uniqueName("recycle-jobs")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, id: "\(queue)-worker", arguments: ["--max-jobs", "3", "--width", "2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let jobs = (1...9).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) }
            try producer.enqueue(Array(jobs.prefix(3)))
            _ = try tap.waitForResults(jobs.prefix(3).map(\.id))
            try waitUntil(worker, restarted: 1)
            let descriptors = openDescriptors(of: worker)
            try producer.enqueue(Array(jobs.dropFirst(3)))
            let results = try tap.waitForResults(jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded && $0.workerID == "\(queue)-worker" })
            // Nine jobs, three per process: three fresh starts, the same process all along.
            try waitUntil(worker, restarted: 3)
            #expect(worker.process.isRunning)
            // Nothing piles up from one process to the next.
            #expect(
                openDescriptors(of: worker) <= descriptors,
                "descriptors open after the first fresh start: \(descriptors)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(restarts(of: worker) == 3)
            #expect(try BrokerProbe.depth(of: queue) == 0)
        }

        @Test(
            "--max-memory: past the limit, jobs not started go back, executing ones end whatever the grace, and the worker starts afresh"
        )
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
            let status = try CLI.run([
                "status", "--queue", queue, "--timeout", "1", "--url", try TestEnvironment.brokerURL,
            ])
            #expect(status.stdout.contains(" recycling=maxJobs\n"), "\(status.stdout)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(restarts(of: worker) == 0, "\(worker.stderr)")
            // Cancelled at the end of the grace period, and back in the broker for another worker.
            #expect(try BrokerProbe.depth(of: queue) == 1)
        }

        @Test(
            "a job waiting for its dependencies counts only once they ended: it neither starves the queue nor makes the worker spin"
        )
        func dependenciesDoNotCount() throws {
            let queue = TestEnvironment.uniqueName("recycle-deps")
            let other = TestEnvironment.uniqueName("recycle-deps-other")
            defer { [queue, other].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let producer = try Producer.forTests()
            let dependency = JobRequest(type: "echo", input: "first", queue: other)
            let dependent = JobRequest(type: "echo", input: "then", queue: queue, dependencies: [dependency.id])
            let free = JobRequest(type: "echo", input: "free", queue: queue)
            try producer.enqueue([dependency, dependent, free])
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-jobs", "1", "--prefetch", "1"])
            defer { worker.terminate() }
            // The dependent job, first in the queue, waits; the one behind it runs and the worker starts afresh.
            _ = try tap.waitForResults([free.id])
            let helper = try CLI.startWorker(queue: other)
            defer { helper.terminate() }
            let results = try tap.waitForResults([dependency.id, dependent.id])
            #expect(results.map(\.status) == [.succeeded, .succeeded])
            Thread.sleep(forTimeInterval: 0.5)
            // One fresh start per job that ran; the waiting job sent back at the first did not start a loop.
            #expect(restarts(of: worker) == 2, "\(worker.stderr)")
        }

        @Test("a fresh copy keeps the rate limit's pace: starting afresh makes no burst")
        func rateLimitPace() throws {
            let queue = TestEnvironment.uniqueName("recycle-rate")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let producer = try Producer.forTests()
            let jobs = (1...3).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) }
            try producer.enqueue(jobs)
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-jobs", "1", "--rate-limit", "echo=60/m"])
            defer { worker.terminate() }
            let results = try tap.waitForResults(jobs.map(\.id))
            let starts = try results.map { try #require($0.timings.startedAt) }.sorted()
            for (earlier, later) in zip(starts, starts.dropFirst()) {
                // A second apart at 60/m, each in a process of its own; timings travel to the millisecond.
                #expect(later.timeIntervalSince(earlier) >= 0.999, "\(starts)")
            }
            #expect(restarts(of: worker) >= 2)
        }

        @Test("a broker restart while a worker recycles: the fresh copy waits for it, and every job ends once")
        func brokerRestart() throws {
            let queue = TestEnvironment.uniqueName("recycle-restart")
            defer { BrokerProbe.delete(queue) }
            let durable = try Chaos.DurableResults()
            let producer = try Producer.forTests()
            let long = JobRequest(type: "sleep", input: ["seconds": 3], queue: queue)
            let quick = (1...20).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) }
            try producer.enqueue([long] + quick)
            producer.close()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-jobs", "1"])
            defer { worker.terminate() }
            try worker.waitForStart(of: long.id)
            try Chaos.brokerCtl(["stop_app"])
            try Chaos.brokerCtl(["start_app"])
            var seen: [String: Int] = [:]
            let deadline = ContinuousClock.now + .seconds(90)
            while seen.count < 21, ContinuousClock.now < deadline {
                for result in durable.drain() { seen[result.jobID, default: 0] += 1 }
                Thread.sleep(forTimeInterval: 0.2)
            }
            #expect(seen.count == 21 && seen.values.allSatisfy { $0 == 1 }, "\(seen)")
            // The long job ran once: its redelivery after the restart came back to the process running it.
            let starts = worker.stderr.split(separator: "\n").filter {
                $0.contains("job=\(long.id)") && $0.hasSuffix("job started")
            }
            #expect(starts.count == 1, "\(worker.stderr)")
            #expect(worker.process.isRunning)
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
