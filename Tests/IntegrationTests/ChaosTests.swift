import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Chaos {
        /// Adds a virtual host of the test broker named after `prefix`, where guest may do anything; returns its
        /// name (delete it with `delete_vhost`) and the URL of the test broker there.
        static func addVirtualHost(_ prefix: String) throws -> (name: String, url: String) {
            let name = TestEnvironment.uniqueName(prefix)
            try brokerCtl(["add_vhost", name])
            try brokerCtl(["set_permissions", "-p", name, "guest", ".*", ".*", ".*"])
            return (name, try TestEnvironment.brokerURL.replacingOccurrences(of: "/%2F", with: "/\(name)"))
        }

        /// Runs `scripts/broker ctl DIR ARGS` against the test broker.
        static func brokerCtl(_ arguments: [String]) throws {
            let directory = try #require(TestEnvironment.brokerDirectory, "WARREN_BROKER_DIR is set by scripts/test")
            let ctl = try ChildProcess(
                TestEnvironment.packageRoot.appendingPathComponent("scripts/broker"), ["ctl", directory] + arguments)
            #expect(ctl.waitForExit(timeout: .seconds(120)) == 0, "\(ctl.stderr)")
        }

        /// Makes the test broker close every connection whose client calls itself `name`, as it closes a
        /// connection it drops.
        static func closeConnections(named name: String, reason: String) throws {
            try brokerCtl([
                "eval",
                "[rabbit_networking:close_connection(C, \"\(reason)\") || C <- rabbit_networking:connections(), "
                    + "{client_properties, Properties} <- rabbit_networking:connection_info(C, [client_properties]), "
                    + "{<<\"connection_name\">>, longstr, <<\"\(name)\">>} <- Properties].",
            ])
        }

        /// A durable queue bound to every result, so results published while the test's own connections are down
        /// (during the broker restart) are kept.
        final class DurableResults {
            let queue = TestEnvironment.uniqueName("chaos-results")

            /// Right after a broker restart (another test's), the results stream is still starting (404 "home node …
            /// is down or inaccessible"): tried again for up to 30 s.
            init() throws {
                let deadline = ContinuousClock.now + .seconds(30)
                while true {
                    do {
                        try bind()
                        return
                    } catch  where ContinuousClock.now < deadline {
                        Thread.sleep(forTimeInterval: 0.2)
                    }
                }
            }

            private func bind() throws {
                let connection = try AMQPConnection(
                    configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
                defer { connection.close() }
                try connection.openChannel(1)
                try Topology.declareResults(on: connection, channel: 1)
                try connection.declareQueue(queue, channel: 1)
                try connection.bindQueue(queue, to: Topology.resultsExchange, routingKey: "#", channel: 1)
            }

            /// Every result stored so far (removing them), tolerating a broker that is restarting.
            func drain() -> [JobResult] {
                guard let url = try? TestEnvironment.brokerURL,
                    let connection = try? AMQPConnection(configuration: AMQPConfiguration(url: url))
                else { return [] }
                defer { connection.close() }
                var results: [JobResult] = []
                do {
                    try connection.openChannel(1)
                    while let delivery = try connection.get(queue, noAck: true, channel: 1) {
                        if let result = try? JobResult.decode(delivery.body) { results.append(result) }
                    }
                } catch {}
                return results
            }

            deinit { BrokerProbe.delete(queue) }
        }

        @Test(
            "thousands of jobs survive kill -9 of a worker, a broker restart and cancellations: one terminal result each"
        )
        func chaos() throws {
            let startedAt = Date()
            let jobCount = 3000
            let queue = TestEnvironment.uniqueName("chaos")
            defer { BrokerProbe.delete(queue) }
            let results = try DurableResults()
            var workers = try (1...3).map { index in
                try CLI.startWorker(queue: queue, id: "chaos-\(index)", arguments: ["--width", "4"])
            }
            defer { workers.forEach { $0.terminate() } }

            let producer = try Producer.forTests()
            var jobs: [OperationDescriptor] = []
            for batch in stride(from: 0, to: jobCount, by: 500) {
                jobs += try producer.enqueue(
                    (batch..<min(batch + 500, jobCount)).map { n in
                        JobRequest(type: "sum", input: .numbers([n, 1, 2], delayMs: 10), queue: queue)
                    })
            }
            let cancelled = Set(jobs.suffix(150).map(\.id))
            producer.close()

            var seen: [String: [JobResult]] = [:]
            func collect() { for result in results.drain() { seen[result.jobID, default: []].append(result) } }
            func waitFor(_ count: Int) {
                let deadline = ContinuousClock.now + .seconds(300)
                while seen.count < count && ContinuousClock.now < deadline {
                    collect()
                    Thread.sleep(forTimeInterval: 0.1)
                }
            }

            waitFor(jobCount / 5)
            workers[0].signal(SIGKILL)
            workers[0].waitForExit()
            workers.append(try CLI.startWorker(queue: queue, id: "chaos-4", arguments: ["--width", "4"]))

            waitFor(jobCount / 3)
            try Self.brokerCtl(["stop_app"])
            try Self.brokerCtl(["start_app"])

            // Right after start_app the control stream is still starting (404 "home node … is down or
            // inaccessible"): the producer waits for it.
            let canceller = try Producer.forTests()
            try canceller.cancel(jobIDs: Array(cancelled))
            canceller.close()

            waitFor(jobCount)
            collect()
            let missing = jobs.filter { seen[$0.id] == nil }
            #expect(
                missing.count == 0,
                "jobs without a result:\n\(Self.whereabouts(of: missing.prefix(3).map(\.id), queue: queue, workers: workers))"
            )
            for (n, job) in jobs.enumerated() {
                guard let outcomes = seen[job.id] else { continue }
                if cancelled.contains(job.id) {
                    #expect(outcomes.allSatisfy { $0.status == .succeeded || $0.status == .cancelled })
                } else {
                    #expect(outcomes.allSatisfy { $0.status == .succeeded }, "\(job.id): \(outcomes.map(\.status))")
                    #expect(outcomes.allSatisfy { $0.output?["sum"] == .number(Double(n + 3)) })
                }
            }
            try Self.expectStored(Set(seen.keys), since: startedAt)
            let duplicates = seen.filter { $0.value.count > 1 }
            let redelivered = duplicates.values.filter { $0.contains { $0.redelivered } }.count
            print(
                """
                chaos report: \(jobCount) jobs, \(seen.count) with a result, \(missing.count) lost; \
                \(seen.values.filter { $0.contains { $0.status == .cancelled } }.count) cancelled; \
                \(duplicates.count) have more than one result (\(redelivered) ran again after a redelivery, the rest were \
                answered again from a result whose confirm was lost with the connection): each time a worker was \
                killed, or lost its connection, between publishing a result and its ack reaching the broker
                """)
        }
    }
}

extension Integration.Chaos {
    /// Expects every job in `ended` to have a result in the `warren.results` stream, written since `since`: a job
    /// is acked once the batch storing its result is published, and batches a worker had not seen confirmed when it
    /// lost the broker are appended again once it is back.
    static func expectStored(_ ended: Set<String>, since: Date) throws {
        let reader = try ResultReader(url: TestEnvironment.brokerURL, from: .since(since.addingTimeInterval(-1)))
        defer { reader.close() }
        var stored: Set<String> = []
        while stored.count < ended.count, case .result(let result, _)? = try reader.next(waitingUpTo: .seconds(5)) {
            if case .success(let result) = result, ended.contains(result.jobID) { stored.insert(result.jobID) }
        }
        let missing = ended.subtracting(stored)
        #expect(missing.isEmpty, "\(missing.count) jobs ended without a stored result, e.g. \(missing.prefix(3))")
    }

    /// What the broker and the workers' logs know of jobs that have no result: where the job was last seen.
    static func whereabouts(of ids: [String], queue: String, workers: [ChildProcess]) -> String {
        var lines = ["queue \(queue): \((try? BrokerProbe.depth(of: queue)).map(String.init) ?? "?") messages"]
        if let reader = try? ResultReader(url: TestEnvironment.brokerURL) {
            defer { reader.close() }
            var stored: Set<String> = []
            var unreadable: [String] = []
            while case .result(let result, let offset)? = try? reader.next(waitingUpTo: .seconds(2)) {
                switch result {
                case .success(let result) where ids.contains(result.jobID): stored.insert(result.jobID)
                case .success: break
                case .failure(let error): unreadable.append("offset \(offset ?? 0): \(error)")
                }
            }
            lines.append("in the warren.results stream: \(stored.sorted()); unreadable there: \(unreadable)")
        }
        for id in ids {
            lines.append("\(id):")
            for worker in workers {
                let mentions = worker.stderr.split(separator: "\n").filter { $0.contains(id) }
                lines += mentions.map { "  \(worker.name): \($0)" }
            }
        }
        for worker in workers {
            let events = worker.stderr.split(separator: "\n").filter { !$0.contains("job=") && !$0.contains("debug") }
            lines += events.suffix(15).map { "  \(worker.name): \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    @Test("results --follow survives a broker restart: it reconnects and goes on after the last result it printed")
    func followThroughARestart() throws {
        let queue = TestEnvironment.uniqueName("follow-restart")
        defer { BrokerProbe.delete(queue) }
        let worker = try CLI.startWorker(queue: queue)
        defer { worker.terminate() }
        let follower = try ChildProcess(
            TestEnvironment.warrenBinary, ["results", "--follow", "--json", "--url", try TestEnvironment.brokerURL],
            name: "results --follow")
        defer { follower.terminate() }
        func printed(_ id: String) -> Int { follower.stdout.components(separatedBy: #""jobId":"\#(id)""#).count - 1 }
        func waitUntilPrinted(_ id: String) {
            let deadline = ContinuousClock.now + .seconds(60)
            while printed(id) == 0 && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        }
        // The follower reads from when it started; give it a moment to subscribe.
        Thread.sleep(forTimeInterval: 0.5)
        let before = try Producer.forTests().enqueue(JobRequest(type: "echo", input: "before", queue: queue))
        waitUntilPrinted(before.id)
        #expect(printed(before.id) == 1, "stdout:\n\(follower.stdout)\nstderr:\n\(follower.stderr)")

        try Self.brokerCtl(["stop_app"])
        try Self.brokerCtl(["start_app"])
        try follower.waitForStderr(containing: "reconnected", timeout: .seconds(60))
        try worker.waitForStderr(containing: "reconnected", timeout: .seconds(60))
        let after = try Producer.forTests().enqueue(JobRequest(type: "echo", input: "after", queue: queue))
        waitUntilPrinted(after.id)
        #expect(printed(after.id) == 1, "stdout:\n\(follower.stdout)\nstderr:\n\(follower.stderr)")
        #expect(printed(before.id) == 1, "nothing printed twice after the reconnection")
        #expect(follower.process.isRunning)
    }

    @Test("a worker whose connection is closed again right after it reconnected looks for the broker at once")
    func closedTwiceInARow() throws {
        let queue = TestEnvironment.uniqueName("closed-twice")
        defer { BrokerProbe.delete(queue) }
        let id = TestEnvironment.uniqueName("closed-twice-worker")
        let worker = try CLI.startWorker(queue: queue, id: id)
        defer { worker.terminate() }
        for time in 1...2 {
            try Self.closeConnections(named: "warren worker \(id)", reason: "test: closed \(time)")
            let deadline = ContinuousClock.now + .seconds(30)
            while worker.stderr.components(separatedBy: "] reconnected").count <= time && ContinuousClock.now < deadline
            {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        #expect(worker.stderr.components(separatedBy: "] reconnected").count == 3, "\(worker.stderr)")
        // A close by an operator (320 CONNECTION_FORCED), not a refusal: no wait before reconnecting.
        #expect(!worker.stderr.contains("waiting before reconnecting"), "\(worker.stderr)")
    }

    @Test("a worker stopped while its broker is away waits for it no longer than --grace once its job ended")
    func stopWhileTheBrokerIsAway() throws {
        let queue = TestEnvironment.uniqueName("stop-away")
        defer { BrokerProbe.delete(queue) }
        let worker = try CLI.startWorker(queue: queue, arguments: ["--grace", "10"])
        defer { worker.terminate() }
        // Long enough to outlast the broker's stop (seconds on a loaded machine), short enough to end in the grace.
        let job = try Producer.forTests().enqueue(JobRequest(type: "sleep", input: ["seconds": 6], queue: queue))
        try worker.waitForStart(of: job.id)
        try Self.brokerCtl(["stop_app"])
        var restarted = false
        defer { if !restarted { try? Self.brokerCtl(["start_app"]) } }
        try worker.waitForStderr(containing: "lost the broker; reconnecting")
        worker.signal(SIGTERM)
        // It used to wait twice the grace period, and then to the end of a backoff step (up to 30 s more); it exits
        // while the broker is still away, dropping the result it kept.
        #expect(worker.waitForExit() == 0, "\(worker.stderr)")
        try Self.brokerCtl(["start_app"])
        restarted = true
        #expect(worker.stderr.contains("keeping its result for the redelivery"), "\(worker.stderr)")
        #expect(worker.stderr.contains("dropping the results of jobs that ended after their delivery was lost"))
    }

    @Test("a job's deadline that passes while the broker is away cancels it there, as it would with the broker up")
    func deadlineWhileTheBrokerIsAway() throws {
        let queue = TestEnvironment.uniqueName("deadline-away")
        defer { BrokerProbe.delete(queue) }
        let stored = try DurableResults()
        let worker = try CLI.startWorker(queue: queue)
        defer { worker.terminate() }
        let job = try Producer.forTests().enqueue(
            JobRequest(
                type: "sleep", input: ["seconds": 60], queue: queue, deadline: Date().addingTimeInterval(10)))
        try worker.waitForStart(of: job.id)
        try Self.brokerCtl(["stop_app"])
        var restarted = false
        defer { if !restarted { try? Self.brokerCtl(["start_app"]) } }
        try worker.waitForStderr(containing: "lost the broker; reconnecting")
        // The sleep sees isCancelled once the deadline passes; it ends, its result kept for the redelivery.
        // The deadline passes after the broker went, however slowly stop_app runs on a loaded machine.
        try worker.waitForStderr(containing: "keeping its result for the redelivery", timeout: .seconds(30))
        try Self.brokerCtl(["start_app"])
        restarted = true
        var result: JobResult?
        let published = ContinuousClock.now + .seconds(60)
        while result == nil, ContinuousClock.now < published {
            result = stored.drain().first { $0.jobID == job.id }
            if result == nil { Thread.sleep(forTimeInterval: 0.2) }
        }
        let ended = try #require(result)
        #expect(ended.status == .cancelled && ended.cancellation?.reason == "deadline", "\(ended)")
    }

    @Test("a worker and a scheduler started before their broker wait for it, then work; SIGTERM ends the wait")
    func startBeforeTheBroker() throws {
        let queue = TestEnvironment.uniqueName("start-early")
        defer { BrokerProbe.delete(queue) }
        let directory = try TestEnvironment.temporaryDirectory()
        let file = directory.appendingPathComponent("schedule.json")
        try #"{"schedules": [{"name": "\#(queue)", "every": "1s", "type": "echo", "queue": "\#(queue)"}]}"#
            .write(to: file, atomically: true, encoding: .utf8)
        let url = try TestEnvironment.brokerURL
        try Self.brokerCtl(["stop_app"])
        var restarted = false
        defer { if !restarted { try? Self.brokerCtl(["start_app"]) } }
        let worker = try ChildProcess(
            TestEnvironment.warrenBinary,
            ["worker", "--url", url, "--queue", queue, "--wait-for-broker", "2m", "--log-level", "debug"],
            name: "worker started early")
        defer { worker.terminate() }
        let scheduler = try ChildProcess(
            TestEnvironment.warrenBinary, ["schedule", file.path, "--url", url, "--wait-for-broker", "2m"],
            name: "scheduler started early")
        defer { scheduler.terminate() }
        let stopped = try ChildProcess(
            TestEnvironment.warrenBinary, ["worker", "--url", url, "--queue", queue], name: "worker stopped early")
        defer { stopped.terminate() }
        try worker.waitForStderr(containing: "cannot connect; trying again")
        try scheduler.waitForStderr(containing: "scheduler cannot connect; trying again")
        try stopped.waitForStderr(containing: "cannot connect; trying again")
        stopped.signal(SIGTERM)
        #expect(stopped.waitForExit(timeout: .seconds(10)) == 0, "\(stopped.stderr)")

        try Self.brokerCtl(["start_app"])
        restarted = true
        try worker.waitForStderr(containing: "worker started", timeout: .seconds(90))
        try scheduler.waitForStderr(containing: "leading the schedules", timeout: .seconds(90))
        // The scheduler's ticks reach the worker, which runs them.
        try worker.waitForStderr(containing: "job started", timeout: .seconds(30))
        let producer = try Producer.forTests()
        let job = try producer.enqueue(JobRequest(type: "echo", input: "after", queue: queue), watch: true)
        #expect(try producer.waitForResult(of: job.id, timeout: .seconds(30)).status == .succeeded)
        #expect(worker.process.isRunning && scheduler.process.isRunning)
    }

    @Test(
        "a stopping worker that loses its connection takes back its job's redelivery: the job ends once, not run again")
    func stopThroughAReconnect() throws {
        let queue = TestEnvironment.uniqueName("stop-reconnect")
        defer { BrokerProbe.delete(queue) }
        let tap = try MessageTap.results()
        let id = TestEnvironment.uniqueName("stopping")
        let worker = try CLI.startWorker(queue: queue, id: id, arguments: ["--width", "1"])
        defer { worker.terminate() }
        let job = try Producer.forTests().enqueue(JobRequest(type: "sleep", input: ["seconds": 1.5], queue: queue))
        try worker.waitForStart(of: job.id)
        worker.signal(SIGTERM)
        try worker.waitForStderr(containing: "stopping: no new jobs")
        try Self.closeConnections(named: "warren worker \(id)", reason: "test: a blip while the worker stops")
        #expect(worker.waitForExit(timeout: .seconds(60)) == 0, "\(worker.stderr)")
        #expect(try tap.waitForResult(job.id).status == .succeeded)
        try tap.settle()
        #expect(tap.results(for: job.id).count == 1)
        #expect(
            try BrokerProbe.depth(of: queue) == 0, "the job went back to the broker to run again:\n\(worker.stderr)")
        #expect(worker.stderr.contains("reconnected") && !worker.stderr.contains("dropping the results"))
    }

    @Test("enqueue --wait that loses its connection reads the job's result from the results stream")
    func waitThroughALostConnection() throws {
        let queue = TestEnvironment.uniqueName("wait-lost")
        defer { BrokerProbe.delete(queue) }
        let worker = try CLI.startWorker(queue: queue)
        defer { worker.terminate() }
        let enqueue = try ChildProcess(
            TestEnvironment.warrenBinary,
            [
                "enqueue", "sleep", "--input", #"{"seconds":2}"#, "--queue", queue, "--wait", "--timeout", "60",
                "--url", try TestEnvironment.brokerURL,
            ],
            name: "enqueue --wait")
        defer { enqueue.terminate() }
        let deadline = ContinuousClock.now + .seconds(30)
        while enqueue.stdout.isEmpty && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let id = enqueue.stdout.split(separator: "\n").first.map(String.init) ?? ""
        try worker.waitForStart(of: id)
        try Self.closeConnections(
            named: "warren producer \(enqueue.process.processIdentifier)", reason: "test: lost while waiting")
        #expect(enqueue.waitForExit() == 0, "\(enqueue.stderr)")
        #expect(enqueue.stdout.contains("succeeded \(id)"), "\(enqueue.stdout)")
        #expect(enqueue.stderr.contains("reading their results from the results stream"), "\(enqueue.stderr)")
    }

    @Test("jobs a worker had not started when it lost its connection never start there; their redelivery runs them")
    func unstartedJobsAfterALostConnection() throws {
        let queue = TestEnvironment.uniqueName("lost-waiting")
        defer { BrokerProbe.delete(queue) }
        let tap = try MessageTap.results()
        let firstID = TestEnvironment.uniqueName("lost-first")
        let first = try CLI.startWorker(queue: queue, id: firstID, arguments: ["--width", "1", "--prefetch", "3"])
        defer { first.terminate() }
        let producer = try Producer.forTests()
        let running = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 2], queue: queue))
        let waiting = try (0..<2).map { _ in try producer.enqueue(JobRequest(type: "echo", input: "w", queue: queue)) }
        try first.waitForStart(of: running.id)
        // The second worker is consuming before the first loses its connection, so it takes the requeued jobs.
        let second = try CLI.startWorker(queue: queue, arguments: ["--width", "4", "--prefetch", "10"])
        defer { second.terminate() }
        try Self.closeConnections(named: "warren worker \(firstID)", reason: "test: the worker loses the broker")
        let results = try tap.waitForResults(([running] + waiting).map(\.id))
        #expect(results.allSatisfy { $0.status == .succeeded })
        // The first worker's sleep goes on and ends; before the fix, the waiting jobs started after it.
        try first.waitForStderr(containing: "job ended after its delivery was lost")
        try tap.settle()
        for job in waiting {
            #expect(!first.logsStart(of: job.id), "job \(job.id) started on the worker whose delivery was gone")
            #expect(tap.results(for: job.id).count == 1)
        }
        #expect(first.process.isRunning && second.process.isRunning)
    }

    @Test("a result batch the stream has not confirmed when the connection drops is appended again after reconnecting")
    func unconfirmedBatchIsAppendedAgain() throws {
        let queue = TestEnvironment.uniqueName("resend")
        defer { BrokerProbe.delete(queue) }
        let workerID = TestEnvironment.uniqueName("resend-worker")
        let worker = try CLI.startWorker(queue: queue, id: workerID)
        defer { worker.terminate() }
        let startedAt = Date()
        // The stream's writer takes no more writes, so confirms nothing, until it is resumed.
        let writer =
            #"{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"warren.results">>)), "#
            + "P = amqqueue:get_pid(Q)"
        try Self.brokerCtl(["eval", writer + ", sys:suspend(P)."])
        var suspended = true
        defer { if suspended { try? Self.brokerCtl(["eval", writer + ", sys:resume(P)."]) } }

        let producer = try Producer.forTests()
        let job = try producer.enqueue(JobRequest(type: "echo", input: "kept", queue: queue), watch: true)
        #expect(try producer.waitForResult(of: job.id, timeout: .seconds(30)).status == .succeeded)
        // Acked once its batch is published, without the stream's confirm.
        let acked = ContinuousClock.now + .seconds(10)
        while try BrokerProbe.depth(of: queue) > 0, ContinuousClock.now < acked { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try BrokerProbe.depth(of: queue) == 0)
        try Self.closeConnections(named: "warren worker \(workerID)", reason: "test: the worker loses the broker")
        try worker.waitForStderr(containing: "reconnected")
        try Self.brokerCtl(["eval", writer + ", sys:resume(P)."])
        suspended = false

        // The writer stores the batch it held and the batch appended again: the result twice, which readers
        // take as one.
        let reader = try ResultReader(url: TestEnvironment.brokerURL, from: .since(startedAt.addingTimeInterval(-1)))
        defer { reader.close() }
        var copies = 0
        while copies < 2, case .result(let result, _)? = try reader.next(waitingUpTo: .seconds(10)) {
            if case .success(let result) = result, result.jobID == job.id { copies += 1 }
        }
        #expect(copies == 2, "the stream holds \(copies) copies of the result; worker log:\n\(worker.stderr)")
    }

    @Test("a job that outlives consumer_timeout: the worker reconnects, adopts the redelivery, and the job ends once")
    func consumerTimeout() throws {
        let queue = TestEnvironment.uniqueName("consumer-timeout")
        defer { BrokerProbe.delete(queue) }
        // Channels opened from now on get a 2 s consumer_timeout; RabbitMQ checks it about once a minute.
        try Self.brokerCtl(["eval", "application:set_env(rabbit, consumer_timeout, 2000)."])
        defer { try? Self.brokerCtl(["eval", "application:set_env(rabbit, consumer_timeout, 1800000)."]) }
        let tap = try MessageTap.results()
        let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1"])
        defer { worker.terminate() }
        try Self.brokerCtl(["eval", "application:set_env(rabbit, consumer_timeout, 1800000)."])
        let job = try Producer.forTests().enqueue(JobRequest(type: "sleep", input: ["seconds": 75], queue: queue))
        let result = try tap.waitForResult(job.id, timeout: .seconds(150))
        #expect(result.status == .succeeded)
        #expect(result.redelivered, "the broker took the delivery back when the timeout closed the channel")
        #expect(worker.stderr.contains("PRECONDITION_FAILED"))
        #expect(worker.stderr.contains("reconnected"))
        try tap.settle(for: .seconds(1))
        #expect(tap.results(for: job.id).count == 1)
        #expect(try BrokerProbe.depth(of: queue) == 0)
    }
}
