import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct TimeLimits {
        @Test("a job that runs past its type's time limit is cancelled, fails with timeLimit and is dead-lettered")
        func pastTheLimit() throws {
            let queue = TestEnvironment.uniqueName("limit")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--width", "4", "--time-limit", "sum=1s", "--time-limit", "sleep=800ms"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            // A blocking job that checks for cancellation (ListAdder's adder, 60 s of work), an asynchronous one
            // (a minute of sleep), a quick one of a limited type and one of a type without a limit.
            let long = JobRequest(type: "sum", input: .numbers(Array(1...600), delayMs: 100), queue: queue)
            let nap = JobRequest(type: "sleep", input: ["seconds": 60], queue: queue)
            let quick = JobRequest(type: "sum", input: .numbers([1, 2, 3]), queue: queue)
            let free = JobRequest(type: "echo", input: "free", queue: queue)
            try producer.enqueue([long, nap, quick, free])
            let results = try tap.waitForResults([long.id, nap.id, quick.id, free.id])
            #expect(results.map(\.status) == [.failed, .failed, .succeeded, .succeeded])
            #expect(results[0].error == JobError(code: "timeLimit", message: "the job ran longer than its time limit of 1 s and was cancelled"))
            #expect(results[1].error?.message == "the job ran longer than its time limit of 800 ms and was cancelled")
            for result in results.prefix(2) {
                let started = try #require(result.timings.startedAt)
                let finished = try #require(result.timings.finishedAt)
                // Timings travel to the millisecond.
                #expect(finished.timeIntervalSince(started) >= 0.799, "not cancelled before its limit: \(result.timings)")
            }
            try dead.read(timeout: .seconds(30)) { letters in
                [long.id, nap.id].allSatisfy { id in letters.contains { $0.properties.messageID == id } }
            }
            for id in [long.id, nap.id] {
                let letter = try #require(dead.messages.first { $0.properties.messageID == id })
                #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "timeLimit")
            }
            #expect(worker.stderr.contains("job=\(long.id)") && worker.stderr.contains("cancelling job: it ran longer than its time limit"))
            #expect(try BrokerProbe.depth(of: queue) == 0, "not retried: the failure is not retryable")
        }

        @Test("the limit counts from the job's start, not from its arrival: jobs that waited for a thread still run")
        func countsFromTheStart() throws {
            let queue = TestEnvironment.uniqueName("limit-start")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--width", "1", "--prefetch", "3", "--time-limit", "sum=2s"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            // Three jobs of about 0.9 s each on one thread: the last ends more than 2 s after the three arrived.
            let jobs = (1...3).map { _ in JobRequest(type: "sum", input: .numbers([1, 2, 3], delayMs: 300), queue: queue) }
            try producer.enqueue(jobs)
            let results = try tap.waitForResults(jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .succeeded }, "\(results.map(\.error))")
            let arrived = try results.map { try #require($0.timings.receivedAt) }.min()!
            let ended = try results.map { try #require($0.timings.finishedAt) }.max()!
            #expect(ended.timeIntervalSince(arrived) > 2, "the last job was held longer than the limit in all")
        }

        @Test("--time-limit refuses a malformed limit and a type the worker does not run, with exit 64")
        func badLimits() throws {
            let url = try TestEnvironment.brokerURL
            let cases = [
                ("sum=soon", "--time-limit sum=soon: 'soon' is no duration"),
                ("sum=0s", "--time-limit sum=0s: expected 1 ms to a year"),
                ("nope=1s", "time limit for operation type 'nope', which this worker does not run"),
            ]
            for (limit, message) in cases {
                let output = try CLI.run(["worker", "--url", url, "--time-limit", limit])
                #expect(output.status == 64, "\(limit): \(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
            }
        }
    }
}
