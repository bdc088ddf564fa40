import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Dependencies {
        @Test(
            "a job waits for a job on another worker and another queue; failed and cancelled dependencies count as ended"
        )
        func acrossWorkers() throws {
            let first = TestEnvironment.uniqueName("deps-a")
            let second = TestEnvironment.uniqueName("deps-b")
            defer {
                BrokerProbe.delete(first)
                BrokerProbe.delete(second)
            }
            let tap = try MessageTap.results()
            let one = try CLI.startWorker(queue: first, id: "deps-1")
            defer { one.terminate() }
            let two = try CLI.startWorker(queue: second, id: "deps-2")
            defer { two.terminate() }
            let producer = try Producer.forTests()
            let slow = JobRequest(type: "sleep", input: ["seconds": 1], queue: first)
            let bad = JobRequest(type: "fail", queue: first)
            let after = JobRequest(type: "echo", input: "after", queue: second, dependencies: [slow.id])
            let strict = JobRequest(
                type: "echo", input: "never", queue: second, dependencies: [bad.id], requireSuccess: true)
            let tolerant = JobRequest(type: "echo", input: "tolerant", queue: second, dependencies: [bad.id, slow.id])
            // Dependents first: the producer reorders so that dependencies are published before their dependents.
            let jobs = try producer.enqueue([after, strict, tolerant, slow, bad])
            #expect(jobs.map(\.id) == [after.id, strict.id, tolerant.id, slow.id, bad.id])
            let results = try tap.waitForResults([slow.id, bad.id, after.id, strict.id, tolerant.id])
            #expect(results.map(\.status) == [.succeeded, .failed, .succeeded, .cancelled, .succeeded])
            #expect(results[2].workerID == "deps-2")
            #expect(try #require(results[2].timings.startedAt) >= (try #require(results[0].timings.finishedAt)))
            #expect(results[3].cancellation?.reason == "dependency")
            #expect(results[3].timings.startedAt == nil)
        }

        @Test(
            "a dependency run again by warren dead requeue: its new result supersedes the failed one, for dependents and for warren results"
        )
        func requeuedDependency() throws {
            let queue = TestEnvironment.uniqueName("deps-requeue")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let tap = try MessageTap.results()
            let producer = try Producer.forTests()
            // The first run of `flaky` passes its time limit and is dead-lettered.
            let strict = try CLI.startWorker(queue: queue, arguments: ["--time-limit", "sleep=100ms"])
            let flaky = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 0.5], queue: queue))
            #expect(try tap.waitForResult(flaky.id).error?.code == "timeLimit")
            // Stopped gracefully, so that the failed job's ack reaches the broker: killed, it would run again.
            strict.signal(SIGTERM)
            #expect(strict.waitForExit() == 0)
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            // The worker reads the results stream from here on: it saw the failure.
            let early = try producer.enqueue(JobRequest(type: "echo", queue: queue, dependencies: [flaky.id]))
            #expect(try tap.waitForResult(early.id).status == .succeeded)

            let requeue = try CLI.run(["dead", "requeue", flaky.id, "--url", url])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            try tap.read(timeout: .seconds(60)) { _ in tap.results(for: flaky.id).count == 2 }
            let rerun = try #require(tap.results(for: flaky.id).last)
            #expect(rerun.status == .succeeded && rerun.requeuedAt != nil)
            let after = try producer.enqueue(
                JobRequest(type: "echo", queue: queue, dependencies: [flaky.id], requireSuccess: true))
            let result = try tap.waitForResult(after.id)
            #expect(result.status == .succeeded, "\(result.cancellation?.message ?? "")")
            // A worker that starts reading the stream now reads the failure first, and holds it until it has read
            // what was stored up to then: the rerun.
            let other = TestEnvironment.uniqueName("deps-requeue-fresh")
            defer { BrokerProbe.delete(other) }
            let fresh = try CLI.startWorker(queue: other)
            defer { fresh.terminate() }
            let late = try producer.enqueue(
                JobRequest(type: "echo", queue: other, dependencies: [flaky.id], requireSuccess: true))
            let lateResult = try tap.waitForResult(late.id)
            #expect(lateResult.status == .succeeded, "\(lateResult.cancellation?.message ?? "")")

            let listed = try CLI.run(["results", "--job", flaky.id, "--url", url])
            let lines = listed.stdout.split(separator: "\n")
            #expect(lines.count == 2 && lines[0].hasPrefix("failed \(flaky.id)"), "\(listed.stdout)")
            #expect(lines.last?.hasPrefix("succeeded \(flaky.id)") == true, "\(listed.stdout)")
            #expect(lines.last?.contains(" requeued=20") == true, "\(listed.stdout)")
        }

        @Test("waiting jobs never starve a worker of the jobs they wait for (width 1, prefetch 1)")
        func noStarvation() throws {
            let queue = TestEnvironment.uniqueName("deps-starve")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            // A foreign producer puts six dependents ahead of their dependency in the same queue.
            try Producer.forTests().enqueue(JobRequest(type: "echo", input: "declare", queue: queue))
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            let root = UUID().uuidString.lowercased()
            let waiting = (1...6).map { _ in UUID().uuidString.lowercased() }
            for id in waiting {
                let body = #"{"version":1,"id":"\#(id)","type":"echo","dependencies":["\#(root)"]}"#
                try connection.publish(Array(body.utf8), exchange: "", routingKey: queue, channel: 1)
            }
            try connection.publish(
                Array(#"{"version":1,"id":"\#(root)","type":"echo"}"#.utf8), exchange: "", routingKey: queue, channel: 1
            )
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "1"])
            defer { worker.terminate() }
            let results = try tap.waitForResults([root] + waiting)
            #expect(results.allSatisfy { $0.status == .succeeded })
            #expect(results.count == 7)
        }

        @Test(
            "with the parked jobs at their limit, a job whose dependencies all ended is still parked, and runs: its dependents do not wait for it for good"
        )
        func parkedLimitWithAReadyDependency() throws {
            let queue = TestEnvironment.uniqueName("deps-full")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2", "--max-parked-jobs", "3"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let root = JobRequest(type: "echo", input: "root", queue: queue)
            // It comes back from its delay queue once its six dependents fill the parked jobs.
            let middle = JobRequest(
                type: "echo", input: "middle", queue: queue, notBefore: Date(timeIntervalSinceNow: 2),
                dependencies: [root.id])
            let leaves = (1...6).map { _ in JobRequest(type: "echo", queue: queue, dependencies: [middle.id]) }
            try producer.enqueue([root, middle] + leaves)
            let results = try tap.waitForResults([root, middle].map(\.id) + leaves.map(\.id), timeout: .seconds(60))
            #expect(results.allSatisfy { $0.status == .succeeded })
        }

        @Test("a waiting job can be cancelled; a cancelled dependency releases its dependents")
        func cancelWhileWaiting() throws {
            let queue = TestEnvironment.uniqueName("deps-cancel")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let long = JobRequest(type: "sleep", input: ["seconds": 60], queue: queue)
            let doomed = JobRequest(type: "echo", input: "doomed", queue: queue, dependencies: [long.id])
            let patient = JobRequest(type: "echo", input: "patient", queue: queue, dependencies: [long.id])
            try producer.enqueue([long, doomed, patient])
            try worker.waitForStart(of: long.id)
            try producer.cancel(jobIDs: [doomed.id])
            let cancelled = try tap.waitForResult(doomed.id)
            #expect(cancelled.status == .cancelled)
            #expect(cancelled.timings.startedAt == nil)
            try producer.cancel(jobIDs: [long.id])
            let results = try tap.waitForResults([long.id, patient.id])
            #expect(results.map(\.status) == [.cancelled, .succeeded])
        }

        @Test("a dependency that ended before its dependent was enqueued, on another worker, is known, with its output")
        func endedEarlier() throws {
            let queue = TestEnvironment.uniqueName("deps-earlier")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let first = try CLI.startWorker(queue: queue)
            let done = try producer.enqueue(
                JobRequest(type: "sum", input: ["numbers": [2, 3]], queue: queue), watch: true)
            #expect(try producer.waitForResult(of: done.id, timeout: .seconds(30)).status == .succeeded)
            first.signal(SIGTERM)
            first.waitForExit()
            let second = try CLI.startWorker(queue: queue)
            defer { second.terminate() }
            // Listed twice, it is one dependency, added once.
            let later = try producer.enqueue(
                JobRequest(
                    type: "sum", input: ["addDependencySums": true], queue: queue, dependencies: [done.id, done.id]),
                watch: true)
            let result = try producer.waitForResult(of: later.id, timeout: .seconds(30))
            #expect(result.status == .succeeded)
            #expect(result.output?["sum"] == .number(5), "the result read back from the stream")
        }

        @Test("a job receives its dependencies' results: partial sums on two workers, then their total")
        func resultsFlowAlongDependencies() throws {
            let first = TestEnvironment.uniqueName("deps-map")
            let second = TestEnvironment.uniqueName("deps-reduce")
            defer {
                BrokerProbe.delete(first)
                BrokerProbe.delete(second)
            }
            let tap = try MessageTap.results()
            let one = try CLI.startWorker(queue: first, id: "map-1")
            defer { one.terminate() }
            let two = try CLI.startWorker(queue: second, id: "reduce-1")
            defer { two.terminate() }
            let producer = try Producer.forTests()
            let slow = JobRequest(type: "sum", input: ["numbers": [1, 2, 3], "delayMs": 100], queue: first)
            let local = JobRequest(type: "sum", input: ["numbers": [4, 5, 6]], queue: second)
            let total = JobRequest(
                type: "sum", input: ["numbers": [100], "addDependencySums": true], queue: second,
                dependencies: [slow.id, local.id])
            let failing = JobRequest(type: "fail", queue: first)
            let broken = JobRequest(
                type: "sum", input: ["addDependencySums": true], queue: second, dependencies: [local.id, failing.id])
            try producer.enqueue([total, broken, slow, local, failing])
            let results = try tap.waitForResults([total.id, broken.id])
            #expect(results[0].status == .succeeded)
            #expect(results[0].output?["sum"] == .number(121))
            #expect(results[1].status == .failed)
            #expect(results[1].error?.code == "dependencyOutput")
            #expect(results[1].error?.message == "dependency \(failing.id) ended failed")
        }

        @Test("a dependency that ended while the worker read the stream has its result read again at its offset")
        func resultReadAtItsOffset() throws {
            let queue = TestEnvironment.uniqueName("deps-offset")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            // A job parked for the whole test makes the worker read the results stream.
            let long = JobRequest(type: "sleep", input: ["seconds": 120], queue: queue)
            let parked = JobRequest(type: "echo", queue: queue, dependencies: [long.id])
            try producer.enqueue([long, parked])
            try worker.waitForStart(of: long.id)
            let done = try producer.enqueue(
                JobRequest(type: "sum", input: ["numbers": [7, 8]], queue: queue), watch: true)
            #expect(try producer.waitForResult(of: done.id, timeout: .seconds(30)).status == .succeeded)
            // Its copy in the stream is read within moments; from then on the worker knows its offset.
            Thread.sleep(forTimeInterval: 1)
            let dependents = (1...3).map { number in
                JobRequest(
                    type: "sum", input: ["numbers": [.integer(Int64(number))], "addDependencySums": true], queue: queue,
                    dependencies: [done.id])
            }
            for dependent in dependents { try producer.enqueue(dependent, watch: true) }
            let sums = try dependents.map {
                try producer.waitForResult(of: $0.id, timeout: .seconds(30)).output?["sum"]
            }
            #expect(sums == [.number(16), .number(17), .number(18)])
            #expect(worker.stderr.contains("reading a dependency's result from the results stream"))
            try producer.cancel(jobIDs: [long.id, parked.id])
        }

        @Test(
            "parked jobs that end while their worker waits to reconnect leave nothing parked: the prefetch comes back down"
        )
        func parkedAcrossAnOutage() throws {
            let queue = TestEnvironment.uniqueName("deps-outage")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, id: "deps-outage", arguments: ["--prefetch", "2"])
            defer { worker.terminate() }
            let waiting = (1...3).map { _ in UUID().uuidString.lowercased() }
            do {
                let connection = try AMQPConnection(
                    configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
                defer { connection.close() }
                try connection.openChannel(1)
                for id in waiting {
                    let body = #"{"version":1,"id":"\#(id)","type":"echo","dependencies":["never-\#(id)"]}"#
                    // Persistent: they outlive the broker's restart.
                    try connection.publish(
                        Array(body.utf8), exchange: "", routingKey: queue,
                        properties: MessageProperties(persistent: true),
                        channel: 1)
                }
            }
            func prefetch(becomes expected: Int) throws -> Int? {
                let deadline = ContinuousClock.now + .seconds(120)
                var seen: Int?
                while ContinuousClock.now < deadline {
                    let producer = try? Producer.forTests()
                    seen = (try? producer?.workerStatuses())?.first { $0.workerID == "deps-outage" }?.prefetch
                    producer?.close()
                    if seen == expected { break }
                    Thread.sleep(forTimeInterval: 0.2)
                }
                return seen
            }
            #expect(try prefetch(becomes: 5) == 5, "three jobs parked")
            // The worker's first attempts to reconnect fail: the parked jobs, cancelled with the connection, end then.
            try Chaos.brokerCtl(["stop_app"])
            Thread.sleep(forTimeInterval: 1)
            try Chaos.brokerCtl(["start_app"])
            #expect(try prefetch(becomes: 5) == 5, "parked again once redelivered; the worker's log:\n\(worker.stderr)")
            try Producer.forTests().cancel(jobIDs: waiting)
            #expect(try prefetch(becomes: 2) == 2, "the worker's log:\n\(worker.stderr)")
        }

        @Test("cycles, self-dependencies and unknown ids are refused before anything is published")
        func refusedGraphs() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("deps-refused")
            defer { BrokerProbe.delete(queue) }
            let directory = try TestEnvironment.temporaryDirectory()
            let graphs = [
                (
                    #"{"jobs":[{"name":"a","type":"echo","dependsOn":["b"]},{"name":"b","type":"echo","dependsOn":["a"]}]}"#,
                    "dependency cycle: '"
                ),
                (#"{"jobs":[{"name":"a","type":"echo","dependsOn":["a"]}]}"#, "depends on itself"),
                (#"{"jobs":[{"name":"a","type":"echo","dependsOn":["no-such-job"]}]}"#, "unknown job no-such-job"),
                (
                    #"{"jobs":[{"name":"a","type":"echo"},{"name":"b","type":"echo","depends_on":["a"]}]}"#,
                    "jobs[1]: unknown member 'depends_on'"
                ),
                (#"{"jobs":[{"name":"a","type":"echo"}],"job":[]}"#, "unknown member 'job'"),
                (#"{"jobs":[{"name":"a","type":"echo"},{"name":"a","type":"echo"}]}"#, "names job 'a' twice"),
                (#"{"jobs":[{"name":"a","type":7}]}"#, "jobs[0].type: expected a string"),
                (#"{"jobs":[]}"#, "lists no jobs"),
                (#"{"jobs":[{"name":"","type":"echo"}]}"#, "a job's name is empty"),
                (#"{"jobs":[{"name":"a b","type":"echo"}]}"#, "a name has no spaces"),
                (#"{"jobs":[{"name":"a","type":"echo","requireSuccess":true}]}"#, "requireSuccess needs dependsOn"),
                (#"{"jobs":[{"name":"a","type":"echo","maxAttempts":0}]}"#, "maxAttempts must be at least 1"),
                (
                    #"{"jobs":[{"name":"a","type":"echo","deadline":-1}]}"#,
                    "deadline must be a number of seconds above 0"
                ),
                (#"{"jobs":"#, "is not JSON"),
            ]
            for (index, (graph, message)) in graphs.enumerated() {
                let file = directory.appendingPathComponent("graph\(index).json")
                try Data(graph.utf8).write(to: file)
                let output = try CLI.run(["enqueue", "--graph", file.path, "--queue", queue, "--url", url])
                #expect(output.status == 64, "\(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
            }
            // An invalid id anywhere in a submission refuses all of it, the valid jobs before it included.
            let valid = JobRequest(type: "echo", queue: queue, id: TestEnvironment.uniqueName("valid"))
            let invalid = JobRequest(type: "echo", queue: queue, id: "no spaces allowed")
            #expect(throws: WarrenError.self) { try Producer.forTests().enqueue([valid, invalid]) }
            #expect(((try? BrokerProbe.depth(of: queue)) ?? 0) == 0, "nothing was published")
        }

        @Test("a job enqueued with another state directory is unknown here, unless dependencies go unchecked")
        func uncheckedDependencies() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("deps-unchecked")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let (elsewhere, here) = (try TestEnvironment.temporaryDirectory(), try TestEnvironment.temporaryDirectory())
            let first = try CLI.run(
                ["enqueue", "sleep", "--input", #"{"seconds":0.5}"#, "--queue", queue, "--url", url],
                environment: ["WARREN_STATE_DIR": elsewhere.path])
            #expect(first.status == 0, "\(first.stderr)")
            let id = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

            let refused = try CLI.run(
                ["enqueue", "echo", "--depends-on", id, "--queue", queue, "--url", url],
                environment: ["WARREN_STATE_DIR": here.path])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("unknown job \(id)"), "\(refused.stderr)")
            // A state directory not made yet knows no job either.
            let fresh = here.appendingPathComponent("not-yet").path
            let unmade = try CLI.run(
                ["enqueue", "echo", "--depends-on", id, "--queue", queue, "--url", url],
                environment: ["WARREN_STATE_DIR": fresh])
            #expect(unmade.status == 64 && unmade.stderr.contains("unknown job \(id)"), "\(unmade.stderr)")
            // And a job without dependencies is enqueued there, the directory made.
            let made = try CLI.run(
                ["enqueue", "echo", "--queue", queue, "--url", url], environment: ["WARREN_STATE_DIR": fresh])
            #expect(made.status == 0, "\(made.stderr)")
            // A state directory that is a file is no answer: an error of the system (exit 1, no usage), not an
            // unknown job, and nothing is published.
            let file = here.appendingPathComponent("a-file").path
            try Data().write(to: URL(fileURLWithPath: file))
            for (dependencies, refusal) in [
                (["--depends-on", id], "cannot open the job journal '\(file)/journal': Not a directory"),
                ([], "cannot create the directory of the sequence file '\(file)/sequence': Not a directory"),
            ] {
                let unusable = try CLI.run(
                    ["enqueue", "echo", "--queue", queue, "--url", url] + dependencies,
                    environment: ["WARREN_STATE_DIR": file])
                #expect(unusable.status == 1, "\(unusable.stderr)")
                #expect(unusable.stderr.hasPrefix("Error: \(refusal)"), "\(unusable.stderr)")
                #expect(
                    unusable.stderr.hasSuffix(" (the state directory, from WARREN_STATE_DIR)\n"), "\(unusable.stderr)")
                #expect(unusable.stdout.isEmpty)
            }
            // A journal that cannot be written fails the call before anything leaves (a queue no worker reads).
            let unjournaled = here.appendingPathComponent("no-journal")
            try FileManager.default.createDirectory(
                at: unjournaled.appendingPathComponent("journal"), withIntermediateDirectories: true)
            let idle = TestEnvironment.uniqueName("deps-unjournaled")
            defer { BrokerProbe.delete(idle) }
            let unwritten = try CLI.run(
                ["enqueue", "echo", "--queue", idle, "--url", url], environment: ["WARREN_STATE_DIR": unjournaled.path])
            #expect(unwritten.status == 1, "\(unwritten.stderr)")
            #expect(unwritten.stderr.contains("cannot open the job journal"), "\(unwritten.stderr)")
            #expect(((try? BrokerProbe.depth(of: idle)) ?? 0) == 0, "nothing was published")
            let typo = try CLI.run(
                ["enqueue", "echo", "--depends-on", "no such id", "--unchecked-dependencies", "--url", url],
                environment: ["WARREN_STATE_DIR": here.path])
            #expect(typo.status == 64, "an id that cannot be a job's is refused even unchecked: \(typo.stderr)")

            let after = try CLI.run(
                [
                    "enqueue", "echo", "--input", #""after""#, "--depends-on", id, "--unchecked-dependencies",
                    "--queue", queue, "--wait", "--json", "--url", url,
                ],
                environment: ["WARREN_STATE_DIR": here.path])
            #expect(after.status == 0, "\(after.stderr)")
            #expect(after.stdout.contains(#""output":"after""#), "\(after.stdout)")
        }

        @Test("a worker that receives a cyclic graph from a foreign producer dead-letters it with the reason")
        func foreignCycle() throws {
            let queue = TestEnvironment.uniqueName("deps-cycle")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            let (a, b) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
            for (id, other) in [(a, b), (b, a)] {
                let body = #"{"version":1,"id":"\#(id)","type":"echo","dependencies":["\#(other)"]}"#
                try connection.publish(Array(body.utf8), exchange: "", routingKey: queue, channel: 1)
            }
            let results = try tap.waitForResults([a, b])
            #expect(results.allSatisfy { $0.status == .failed && $0.error?.code == "dependencyCycle" })
            #expect(results.first?.error?.message.contains("dependency cycle") == true)
            try dead.read(timeout: .seconds(30)) { letters in
                [a, b].allSatisfy { id in
                    letters.contains {
                        String(decoding: $0.body, as: UTF8.self).contains(#""id":"\#(id)""#)
                            && $0.properties.headers?[Topology.deadReasonHeader]?.stringValue == "dependencyCycle"
                    }
                }
            }
            #expect(
                dead.messages.filter {
                    $0.properties.headers?[Topology.deadReasonHeader]?.stringValue == "dependencyCycle"
                }.count >= 2)
            try tap.settle()
            #expect(!worker.logsStart(of: a) && !worker.logsStart(of: b), "no member of the cycle runs")
        }

        @Test("a cycle's last job is refused with the others even when no room is left to park it")
        func cycleBeyondParkingRoom() throws {
            let queue = TestEnvironment.uniqueName("deps-cycle-full")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-parked-jobs", "2"])
            defer { worker.terminate() }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            let ids = (0..<3).map { _ in UUID().uuidString.lowercased() }
            for (index, id) in ids.enumerated() {
                let body = #"{"version":1,"id":"\#(id)","type":"echo","dependencies":["\#(ids[(index + 1) % 3])"]}"#
                try connection.publish(Array(body.utf8), exchange: "", routingKey: queue, channel: 1)
            }
            let results = try tap.waitForResults(ids)
            #expect(results.allSatisfy { $0.status == .failed && $0.error?.code == "dependencyCycle" }, "\(results)")
        }

        @Test("with --max-parked-jobs 0 a dependent goes round through the broker, and runs once its dependency ended")
        func noParkingRoom() throws {
            let queue = TestEnvironment.uniqueName("deps-no-parking")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-parked-jobs", "0"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let first = try producer.enqueue(JobRequest(type: "echo", input: 1, queue: queue), watch: true)
            #expect(try producer.waitForResult(of: first.id, timeout: .seconds(60)).status == .succeeded)
            let dependent = try producer.enqueue(
                JobRequest(type: "echo", input: 2, queue: queue, dependencies: [first.id]), watch: true)
            #expect(try producer.waitForResult(of: dependent.id, timeout: .seconds(60)).status == .succeeded)
        }

        @Test(
            "a dependent whose deadline passed while it went round through the broker ends cancelled, not round again")
        func expiredWhileParkedThroughTheBroker() throws {
            let queue = TestEnvironment.uniqueName("deps-expired")
            let elsewhere = TestEnvironment.uniqueName("deps-never")
            defer { [queue, elsewhere].forEach(BrokerProbe.delete) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-parked-jobs", "0"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            // A dependency nobody runs: the dependent is parked through the broker until its deadline ends it.
            let never = try producer.enqueue(JobRequest(type: "echo", queue: elsewhere))
            let dependent = try producer.enqueue(
                JobRequest(
                    type: "echo", queue: queue, deadline: Date().addingTimeInterval(1), dependencies: [never.id]),
                watch: true)
            let result = try producer.waitForResult(of: dependent.id, timeout: .seconds(60))
            #expect(result.status == .cancelled && result.cancellation?.reason == "deadline", "\(result)")
            #expect(result.timings.startedAt == nil)
        }
    }
}
