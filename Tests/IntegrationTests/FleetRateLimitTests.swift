import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct FleetRateLimits {
        /// The start times of `results`, sorted.
        static func starts(_ results: [JobResult]) throws -> [Date] {
            try results.map { try #require($0.timings.startedAt) }.sorted()
        }

        @Test("two workers with the same fleet-wide limit share it: their jobs start evenly spaced between them")
        func sharedSpacing() throws {
            let queue = TestEnvironment.uniqueName("fleet")
            let limit = try RateLimit(5, per: .seconds(1))
            defer { [queue, FleetRateLimit.queue(forType: "echo", limit: limit)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let arguments = ["--width", "4", "--prefetch", "20", "--fleet-rate-limit", "echo=5/s"]
            let first = try CLI.startWorker(queue: queue, arguments: arguments)
            defer { first.terminate() }
            let second = try CLI.startWorker(queue: queue, arguments: arguments)
            defer { second.terminate() }
            let producer = try Producer.forTests()
            let limited = (1...10).map { JobRequest(type: "echo", input: .integer(Int64($0)), queue: queue) }
            let free = JobRequest(type: "sum", input: ["numbers": [1]], queue: queue)
            try producer.enqueue(limited + [free])
            let results = try tap.waitForResults(limited.map(\.id) + [free.id])
            #expect(results.allSatisfy { $0.status == .succeeded })
            #expect(Set(results.prefix(10).compactMap(\.workerID)).count == 2, "both workers ran some")
            let starts = try Self.starts(Array(results.prefix(10)))
            let gaps = zip(starts.dropFirst(), starts).map { $0.timeIntervalSince($1) }
            // A turn lives 200 ms in the broker's window; each job then starts on a thread of its queue, a moment
            // after its turn came.
            #expect(gaps.allSatisfy { $0 >= 0.18 }, "\(gaps)")
            #expect(
                try #require(results[10].timings.startedAt) < starts[9], "the sum does not wait behind the echo jobs")
            #expect(try BrokerProbe.depth(of: "warren.rate.echo.1per200ms") <= 1)
        }

        @Test(
            "fast limits hold over any second: in windows of 100 ms above twenty a second, one turn apart below",
            arguments: [(40, "4per100ms", 100), (11, "1per91ms", 40)])
        func fastWindows(perSecond: Int, window: String, count: Int) throws {
            let queue = TestEnvironment.uniqueName("fleet-fast")
            let limit = try RateLimit(perSecond, per: .seconds(1))
            defer { [queue, FleetRateLimit.queue(forType: "echo", limit: limit)].forEach(BrokerProbe.delete) }
            #expect(FleetRateLimit.queue(forType: "echo", limit: limit) == "warren.rate.echo.\(window)")
            let tap = try MessageTap.results()
            let arguments = ["--width", "8", "--prefetch", "50", "--fleet-rate-limit", "echo=\(perSecond)/s"]
            let first = try CLI.startWorker(queue: queue, arguments: arguments)
            defer { first.terminate() }
            let second = try CLI.startWorker(queue: queue, arguments: arguments)
            defer { second.terminate() }
            let producer = try Producer.forTests()
            let jobs = (1...count).map { JobRequest(type: "echo", input: .integer(Int64($0)), queue: queue) }
            try producer.enqueue(jobs)
            let starts = try Self.starts(try tap.waitForResults(jobs.map(\.id)))
            // No more than the limit in any second (with a 20 ms margin for the way from a turn to a thread).
            for (index, start) in starts.enumerated() {
                let within = starts[index...].prefix { $0.timeIntervalSince(start) < 0.98 }.count
                #expect(within <= perSecond, "\(within) jobs started within a second of \(start)")
            }
        }

        @Test("turns are taken for free threads only: jobs held up behind a long one do not start in a burst")
        func turnsForFreeThreads() throws {
            let queue = TestEnvironment.uniqueName("fleet-room")
            let limit = try RateLimit(2, per: .seconds(1))
            defer { [queue, FleetRateLimit.queue(forType: "echo", limit: limit)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--width", "1", "--prefetch", "20", "--fleet-rate-limit", "echo=2/s"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let long = JobRequest(type: "sleep", input: ["seconds": 2], queue: queue)
            try producer.enqueue(long)
            try worker.waitForStart(of: long.id)
            let limited = (1...5).map { JobRequest(type: "echo", input: .integer(Int64($0)), queue: queue) }
            try producer.enqueue(limited)
            let starts = try Self.starts(try tap.waitForResults(limited.map(\.id)))
            let gaps = zip(starts.dropFirst(), starts).map { $0.timeIntervalSince($1) }
            #expect(gaps.allSatisfy { $0 >= 0.45 }, "\(gaps)")
        }

        @Test("a window queue deleted while jobs wait is declared again, and the limit holds meanwhile")
        func deletedWindow() throws {
            let queue = TestEnvironment.uniqueName("fleet-deleted")
            let limit = try RateLimit(2, per: .seconds(1))
            let window = FleetRateLimit.queue(forType: "echo", limit: limit)
            defer { [queue, window].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let arguments = ["--width", "2", "--prefetch", "20", "--fleet-rate-limit", "echo=2/s"]
            let workers = try (1...2).map { _ in try CLI.startWorker(queue: queue, arguments: arguments) }
            defer { workers.forEach { $0.terminate() } }
            let producer = try Producer.forTests()
            let jobs = (1...8).map { JobRequest(type: "echo", input: .integer(Int64($0)), queue: queue) }
            try producer.enqueue(jobs)
            _ = try tap.waitForResults(Array(jobs.prefix(2)).map(\.id))
            BrokerProbe.delete(window)
            let starts = try Self.starts(try tap.waitForResults(jobs.map(\.id)))
            let gaps = zip(starts.dropFirst(), starts).map { $0.timeIntervalSince($1) }
            // The deleted window took its live turn with it, and a turn asked for while the broker deleted it is
            // granted yet held nowhere: one start may come early. The window comes back a turn's lifetime after a
            // worker found it missing, so no second one follows.
            #expect(gaps.filter { $0 < 0.45 }.count <= 1, "\(gaps)")
            #expect(
                workers.contains {
                    $0.stderr.contains("a fleet-wide rate limit's queue was missing; declaring it again")
                })
        }

        @Test("with --max-jobs, a job counts once its turn came: one still waiting lets the worker take other jobs")
        func recyclingCountsTurns() throws {
            let queue = TestEnvironment.uniqueName("fleet-recycle")
            let limit = try RateLimit(1, per: .seconds(3600))
            defer { [queue, FleetRateLimit.queue(forType: "sum", limit: limit)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue,
                arguments: ["--width", "2", "--prefetch", "5", "--max-jobs", "3", "--fleet-rate-limit", "sum=1/h"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let first = JobRequest(type: "sum", input: ["numbers": [1]], queue: queue)
            let waiting = JobRequest(type: "sum", input: ["numbers": [2]], queue: queue)
            try producer.enqueue([first, waiting])
            #expect(try tap.waitForResult(first.id).status == .succeeded)
            let others = (1...2).map { JobRequest(type: "echo", input: .integer(Int64($0)), queue: queue) }
            try producer.enqueue(others)
            #expect(try tap.waitForResults(others.map(\.id)).allSatisfy { $0.status == .succeeded })
            #expect(worker.stderr.contains("took the most jobs"), "the third job counted, not the one waiting")
            #expect(tap.results(for: waiting.id).isEmpty)
        }

        @Test("a job waiting for a fleet-wide turn can be cancelled and shows as waiting; bad limits are refused")
        func waitingAndRefused() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("fleet-wait")
            let limit = try RateLimit(1, per: .seconds(3600))
            defer { [queue, FleetRateLimit.queue(forType: "sleep", limit: limit)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, id: "fleet-wait", arguments: ["--width", "2", "--fleet-rate-limit", "sleep=1/h"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let jobs = (1...3).map { _ in JobRequest(type: "sleep", input: ["seconds": 0], queue: queue) }
            try producer.enqueue(jobs)
            #expect(try tap.waitForResult(jobs[0].id).status == .succeeded)
            try producer.cancel(jobIDs: [jobs[1].id])
            let cancelled = try tap.waitForResult(jobs[1].id)
            #expect(cancelled.status == .cancelled && cancelled.timings.startedAt == nil)
            let status = try #require(try producer.workerStatuses(jobs: 10).first { $0.workerID == "fleet-wait" })
            #expect(status.jobs?.map(\.state) == [.waitingForTurn], "\(status)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit() == 0)
            #expect(try BrokerProbe.depth(of: queue) == 1, "the job that waited is back in its queue")

            let cases = [
                (
                    ["--fleet-rate-limit", "echo=5/x"],
                    "--fleet-rate-limit echo=5/x: rate limit '5/x': expected N/s, N/m"
                ),
                (["--fleet-rate-limit", "echo=2000/s"], "above 1,000 jobs a second"),
                (
                    ["--fleet-rate-limit", "echo=5/s", "--rate-limit", "echo=5/s"],
                    "operation type 'echo' has both a rate limit and a fleet-wide one"
                ),
                (
                    ["--fleet-rate-limit", "nope=5/s"],
                    "fleet-wide rate limit for operation type 'nope', which this worker does not run"
                ),
            ]
            for (arguments, message) in cases {
                let output = try CLI.run(["worker", "--url", url] + arguments)
                #expect(output.status == 64, "\(arguments): \(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
            }
        }
    }
}
