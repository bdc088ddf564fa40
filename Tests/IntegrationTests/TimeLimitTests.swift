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
            #expect(
                results[0].error
                    == JobError(
                        code: "timeLimit",
                        message: "the job ran longer than its type's time limit of 1 s and was cancelled"))
            #expect(
                results[1].error?.message == "the job ran longer than its type's time limit of 800 ms and was cancelled"
            )
            for result in results.prefix(2) {
                let started = try #require(result.timings.startedAt)
                let finished = try #require(result.timings.finishedAt)
                // Timings travel to the millisecond.
                #expect(
                    finished.timeIntervalSince(started) >= 0.799, "not cancelled before its limit: \(result.timings)")
            }
            try dead.read(timeout: .seconds(30)) { letters in
                [long.id, nap.id].allSatisfy { id in letters.contains { $0.properties.messageID == id } }
            }
            for id in [long.id, nap.id] {
                let letter = try #require(dead.messages.first { $0.properties.messageID == id })
                #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "timeLimit")
            }
            #expect(
                worker.stderr.contains("job=\(long.id)")
                    && worker.stderr.contains("cancelling job: it ran longer than its time limit"))
            #expect(try BrokerProbe.depth(of: queue) == 0, "not retried: the failure is not retryable")
        }

        @Test("a job's own time limit counts where it is shorter than its type's; a bad one is dead-lettered")
        func ownLimits() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("limit-own")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "4", "--time-limit", "sum=1s"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let adding = JSONValue.numbers(Array(1...600), delayMs: 100)
            // Shorter than its type's; longer than its type's; on a type without a limit; one that is not reached.
            let shorter = JobRequest(type: "sum", input: adding, queue: queue, timeLimit: .milliseconds(300))
            let longer = JobRequest(type: "sum", input: adding, queue: queue, timeLimit: .seconds(60))
            let nap = JobRequest(type: "sleep", input: ["seconds": 60], queue: queue, timeLimit: .milliseconds(500))
            let quick = JobRequest(type: "echo", input: "quick", queue: queue, timeLimit: .seconds(5))
            let descriptors = try producer.enqueue([shorter, longer, nap, quick])
            #expect(descriptors.map(\.timeLimitSeconds) == [0.3, 60, 0.5, 5])
            let results = try tap.waitForResults([shorter.id, longer.id, nap.id, quick.id])
            #expect(results.map(\.status) == [.failed, .failed, .failed, .succeeded])
            #expect(
                results.prefix(3).map { $0.error?.message } == [
                    "the job ran longer than its own time limit of 300 ms and was cancelled",
                    "the job ran longer than its type's time limit of 1 s and was cancelled",
                    "the job ran longer than its own time limit of 500 ms and was cancelled",
                ])

            // From the command line, and from any AMQP client: a limit outside 1 ms to a year is refused.
            let waited = try CLI.run(
                [
                    "enqueue", "sleep", "--input", #"{"seconds":60}"#, "--time-limit", "250ms", "--wait", "--queue",
                    queue,
                    "--url", url,
                ])
            #expect(waited.status == 3, "\(waited.stderr)")
            #expect(waited.stdout.contains("its own time limit of 250 ms"), "\(waited.stdout)")
            let refused = try CLI.run(["enqueue", "echo", "--time-limit", "0s", "--queue", queue, "--url", url])
            #expect(refused.status == 64)
            #expect(
                refused.stderr.contains("--time-limit: a time limit must be from 1 ms to a year"), "\(refused.stderr)")
            let foreignID = TestEnvironment.uniqueName("foreign")
            let body = Array(#"{"version":1,"id":"\#(foreignID)","type":"echo","timeLimitSeconds":0}"#.utf8)
            try ForeignPublisher.publish(body, url: url, routingKey: queue)
            try dead.read(timeout: .seconds(30)) { letters in letters.contains { $0.body == body } }
            let letter = try #require(dead.messages.first { $0.body == body })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "invalidDescriptor")
            let result = try #require(try tap.waitForResults([foreignID]).first)
            #expect(
                result.error?.message
                    == "timeLimitSeconds: a time limit must be from 1 ms to a year (0.001 to 31536000 seconds); got 0.0 seconds"
            )
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
            let jobs = (1...3).map { _ in
                JobRequest(type: "sum", input: .numbers([1, 2, 3], delayMs: 300), queue: queue)
            }
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
