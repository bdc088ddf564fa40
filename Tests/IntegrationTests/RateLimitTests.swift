import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct RateLimits {
        @Test("jobs of a rate-limited type start no closer together than the limit allows; other types do not wait")
        func spacing() throws {
            let queue = TestEnvironment.uniqueName("rate")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--width", "4", "--prefetch", "20", "--rate-limit", "echo=5/s"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let limited = (1...6).map { JobRequest(type: "echo", input: .integer(Int64($0)), queue: queue) }
            let free = JobRequest(type: "sum", input: ["numbers": [1]], queue: queue)
            try producer.enqueue(limited + [free])
            let results = try tap.waitForResults(limited.map(\.id) + [free.id])
            #expect(results.allSatisfy { $0.status == .succeeded })
            let starts = try results.prefix(6).map { try #require($0.timings.startedAt) }.sorted()
            let gaps = zip(starts.dropFirst(), starts).map { $0.timeIntervalSince($1) }
            // Handed to the local queue at least 200 ms apart; each then starts on a thread of the queue, a moment
            // later.
            #expect(gaps.allSatisfy { $0 >= 0.18 }, "\(gaps)")
            let freeStart = try #require(results[6].timings.startedAt)
            #expect(freeStart < starts[5], "the sum, enqueued last, does not wait behind the echo jobs")
        }

        @Test(
            "a job waiting for its turn can be cancelled, shows as waiting, and goes back to the broker when the worker stops"
        )
        func waitingJobs() throws {
            let queue = TestEnvironment.uniqueName("rate-wait")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, id: "rate-wait", arguments: ["--width", "2", "--rate-limit", "sleep=1/h"])
            let producer = try Producer.forTests()
            let jobs = (1...3).map { _ in JobRequest(type: "sleep", input: ["seconds": 0], queue: queue) }
            try producer.enqueue(jobs)
            #expect(try tap.waitForResult(jobs[0].id).status == .succeeded)
            try producer.cancel(jobIDs: [jobs[1].id])
            let cancelled = try tap.waitForResult(jobs[1].id)
            #expect(cancelled.status == .cancelled && cancelled.timings.startedAt == nil)
            let status = try #require(try producer.workerStatuses().first { $0.workerID == "rate-wait" })
            #expect(status.localQueues.first { $0.name == "default" }?.waiting == 1, "\(status)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(try BrokerProbe.depth(of: queue) == 1, "the job that waited is back in its queue")
        }

        @Test(
            "a job that waits on its thread for its turn has not started: the worker stopping sends it back to the broker"
        )
        func waitingOnItsThread() throws {
            let queue = TestEnvironment.uniqueName("rate-gate")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, id: "rate-gate",
                arguments: ["--width", "1", "--prefetch", "3", "--rate-limit", "echo=12/m"])
            let producer = try Producer.forTests()
            // The sum holds the only thread for 4 s: the first echo starts then, and the second, handed over 5 s
            // after the first, reaches the thread at once and waits there until 5 s after the first's start.
            let busy = JobRequest(type: "sum", input: ["numbers": [1, 2], "delayMs": 2000], queue: queue)
            let first = JobRequest(type: "echo", input: "first", queue: queue)
            let second = JobRequest(type: "echo", input: "second", queue: queue)
            try producer.enqueue([busy, first, second])
            #expect(try tap.waitForResult(first.id).status == .succeeded)
            // About 4 s in: the second is handed over a second from now, and waits on the thread until 9 s in.
            Thread.sleep(forTimeInterval: 2.5)
            let status = try producer.workerStatuses().first { $0.workerID == "rate-gate" }?.localQueues.first
            #expect(status?.waiting == 1 && status?.executing == 0, "\(String(describing: status))")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(try BrokerProbe.depth(of: queue) == 1, "the second echo is back in its queue, not run")
        }

        @Test("--rate-limit refuses a malformed limit and a type the worker does not run, with exit 64")
        func badLimits() throws {
            let url = try TestEnvironment.brokerURL
            let cases = [
                ("echo=10/w", "--rate-limit echo=10/w: rate limit '10/w': expected N/s, N/m, N/h or N/d"),
                ("echo=0/s", "a rate limit's count is 0; it must be at least 1"),
                ("echo", "--rate-limit echo: expected type=N/unit"),
                ("nope=1/s", "rate limit for operation type 'nope', which this worker does not run"),
            ]
            for (limit, message) in cases {
                let output = try CLI.run(["worker", "--url", url, "--rate-limit", limit])
                #expect(output.status == 64, "\(limit): \(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
            }
        }
    }
}
