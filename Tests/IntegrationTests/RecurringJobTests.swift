import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    /// Recurring jobs: `warren schedule FILE` and `warren worker --schedule FILE` enqueue a job per tick; one
    /// scheduler of several leads, another takes over when it dies, and a tick missed meanwhile is enqueued late.
    @Suite struct RecurringJobs {
        /// A schedule file of one schedule, `every` seconds, of no-op `echo` jobs into `queue`.
        private static func scheduleFile(name: String, queue: String, every: Int = 1, extra: String = "") throws
            -> String
        {
            let path = try TestEnvironment.temporaryDirectory().appendingPathComponent("schedules.json").path
            let json =
                #"{"schedules": [{"name": "\#(name)", "every": \#(every), "type": "echo", "input": {"tick": true}, "queue": "\#(queue)"\#(extra)}]}"#
            try Data(json.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }

        /// Starts `warren schedule FILE` with debug logs.
        private static func startScheduler(_ file: String, name: String, arguments: [String] = []) throws
            -> ChildProcess
        {
            try ChildProcess(
                TestEnvironment.warrenBinary,
                ["schedule", file, "--url", try TestEnvironment.brokerURL, "--log-level", "debug"] + arguments,
                name: name)
        }

        /// Removes the schedule state other tests left, so that each test starts with none.
        private static func freshState() {
            BrokerProbe.delete(Topology.scheduleQueue)
        }

        /// Runs a scheduler of `file` until it leads and `queue` holds a job, then stops it (SIGTERM); returns it,
        /// ended, for its log.
        @discardableResult
        private static func runUntilAJob(_ file: String, queue: String, name: String) throws -> ChildProcess {
            let scheduler = try startScheduler(file, name: name)
            defer { scheduler.terminate() }
            try scheduler.waitForStderr(containing: "leading the schedules")
            try waitForJobs(in: queue, count: 1)
            scheduler.signal(SIGTERM)
            #expect(scheduler.waitForExit() == 0)
            return scheduler
        }

        /// Runs `body` with a job queue and a schedule name of its own, and no schedule state left by other tests;
        /// removes the queue and the state afterwards.
        private static func withFreshSchedule(_ body: (_ queue: String, _ name: String) async throws -> Void)
            async throws
        {
            freshState()
            let queue = TestEnvironment.uniqueName("recurring")
            defer {
                BrokerProbe.delete(queue)
                freshState()
            }
            try await body(queue, TestEnvironment.uniqueName("beat"))
        }

        /// The ticks of the jobs taken from `queue` (their ids are `NAME:YYYYMMDDTHHMMSSZ`), in queue order.
        private static func takeTicks(from queue: String, name: String) throws -> [Date] {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            var ticks: [Date] = []
            while let delivery = try connection.get(queue, noAck: true, channel: 1) {
                let id = try #require(delivery.properties.messageID)
                #expect(id.hasPrefix("\(name):"))
                let stamp = String(id.dropFirst(name.count + 1))
                ticks.append(
                    try Date.ISO8601FormatStyle().year().month().day().dateTimeSeparator(.standard).time(
                        includingFractionalSeconds: false
                    ).parse(
                        "\(stamp.prefix(4))-\(stamp.dropFirst(4).prefix(2))-\(stamp.dropFirst(6).prefix(2))T\(stamp.dropFirst(9).prefix(2)):\(stamp.dropFirst(11).prefix(2)):\(stamp.dropFirst(13).prefix(2))Z"
                    ))
            }
            return ticks
        }

        /// Waits until `queue` holds at least `count` jobs.
        private static func waitForJobs(in queue: String, count: UInt32, timeout: Duration = .seconds(30)) throws {
            let deadline = ContinuousClock.now + timeout
            while (try? BrokerProbe.depth(of: queue)) ?? 0 < count {
                guard ContinuousClock.now < deadline else {
                    Issue.record("\(queue) did not reach \(count) jobs within \(timeout)")
                    throw ChildProcessError.timeout
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }

        /// The schedule state the stopped schedulers left in `warren.schedules`.
        private static func storedState() throws -> [String: String] {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            var through: [String: String] = [:]
            while let delivery = try connection.get(Topology.scheduleQueue, noAck: false, channel: 1) {
                let object = try JSONDecoder().decode(JSONValue.self, from: Data(delivery.body))
                guard case .object(let schedules)? = object["schedules"] else { continue }
                for (name, entry) in schedules {
                    if case .string(let date)? = entry["through"] { through[name] = max(through[name] ?? "", date) }
                }
            }
            return through
        }

        @Test("a scheduler enqueues one job per tick, with the tick in its id, and leaves the state behind")
        func everyTick() async throws {
            try await Self.withFreshSchedule { queue, name in
                let scheduler = try Self.startScheduler(
                    try Self.scheduleFile(name: name, queue: queue), name: "scheduler")
                defer { scheduler.terminate() }
                try scheduler.waitForStderr(containing: "leading the schedules")
                try Self.waitForJobs(in: queue, count: 4)
                // While it runs, the leader holds the state: nothing is ready in the queue.
                #expect(try BrokerProbe.depth(of: Topology.scheduleQueue) == 0)
                scheduler.signal(SIGTERM)
                #expect(scheduler.waitForExit() == 0)
                let ticks = try Self.takeTicks(from: queue, name: name)
                #expect(ticks.count >= 4)
                for (tick, next) in zip(ticks, ticks.dropFirst()) {
                    #expect(next.timeIntervalSince(tick) == 1, "ticks \(ticks)")
                }
                #expect(scheduler.stderr.contains("enqueued"))
                let state = try Self.storedState()
                let through = try state[name].map {
                    try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0)
                }
                #expect(through == ticks.last, "\(state)")
            }
        }

        @Test(
            "a unique schedule skips the ticks whose earlier job still waits or runs, and enqueues again once it ended")
        func uniqueTicks() async throws {
            try await Self.withFreshSchedule { queue, name in
                let key = TestEnvironment.uniqueName("beat-lock")
                defer { BrokerProbe.delete(UniqueLock.queue(forKey: key)) }
                let file = try Self.scheduleFile(
                    name: name, queue: queue, extra: #", "key": "\#(key)", "uniqueFor": "1m""#)
                let scheduler = try Self.startScheduler(file, name: "scheduler")
                defer { scheduler.terminate() }
                try scheduler.waitForStderr(containing: "leading the schedules")
                // No worker yet: the first tick's job waits in the queue and holds the lock; the next ticks are skipped.
                try Self.waitForJobs(in: queue, count: 1)
                let skip = "skipped a tick: an earlier job of its key still holds"
                let deadline = ContinuousClock.now + .seconds(15)
                while scheduler.stderr.components(separatedBy: skip).count < 3, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(scheduler.stderr.components(separatedBy: skip).count >= 3, "two ticks skipped")
                #expect(try BrokerProbe.depth(of: queue) == 1)
                // A worker runs it, which frees the lock: the next tick's job is enqueued, and runs in turn.
                let tap = try MessageTap.results()
                let worker = try CLI.startWorker(queue: queue)
                defer { worker.terminate() }
                try tap.read(timeout: .seconds(30)) { messages in
                    Set(
                        messages.compactMap { try? JobResult.decode($0.body) }.map(\.jobID).filter {
                            $0.hasPrefix(name)
                        }
                    )
                    .count >= 2
                }
                let ran = Set(tap.messages.compactMap { try? JobResult.decode($0.body) }.map(\.jobID))
                #expect(ran.filter { $0.hasPrefix(name) }.count >= 2, "\(ran)")
            }
        }

        @Test("when the leading scheduler dies, another leads: no tick missed, none enqueued twice")
        func failover() async throws {
            try await Self.withFreshSchedule { queue, name in
                let file = try Self.scheduleFile(name: name, queue: queue)
                let first = try Self.startScheduler(file, name: "first")
                defer { first.terminate() }
                try first.waitForStderr(containing: "leading the schedules")
                let second = try Self.startScheduler(file, name: "second")
                defer { second.terminate() }
                try second.waitForStderr(containing: "scheduler connected")
                try Self.waitForJobs(in: queue, count: 3)
                #expect(!second.stderr.contains("leading the schedules"))
                first.signal(SIGKILL)
                first.waitForExit()
                try second.waitForStderr(containing: "leading the schedules")
                let before = try BrokerProbe.depth(of: queue)
                try Self.waitForJobs(in: queue, count: before + 3)
                second.signal(SIGTERM)
                #expect(second.waitForExit() == 0)
                let ticks = try Self.takeTicks(from: queue, name: name)
                let distinct = Set(ticks).sorted()
                #expect(
                    ticks.count - distinct.count <= 1,
                    "a tick enqueued twice only if the leader died between its job and its state: \(ticks)")
                for (tick, next) in zip(distinct, distinct.dropFirst()) {
                    #expect(next.timeIntervalSince(tick) == 1, "ticks \(distinct)")
                }
            }
        }

        @Test("a tick missed while no scheduler ran is enqueued once, late; with maxLateness it is skipped")
        func missedTicks() async throws {
            try await Self.withFreshSchedule { queue, name in
                for (round, skips) in [(1, false), (2, true)] {
                    let file = try Self.scheduleFile(
                        name: name, queue: queue, every: 4, extra: skips ? #", "maxLateness": 1"# : "")
                    try Self.runUntilAJob(file, queue: queue, name: "round \(round)")
                    let last = try #require(try Self.takeTicks(from: queue, name: name).last)
                    // Down for more than a tick, and back 1.5 to 2 s after one: its job would be late by more than
                    // maxLateness, and the next tick is 2 s away.
                    try await Task.sleep(for: .seconds(4))
                    while !(1.5..<2).contains(Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 4)) {
                        try await Task.sleep(for: .milliseconds(10))
                    }

                    let restart = Date()
                    let restarted = try Self.runUntilAJob(file, queue: queue, name: "round \(round), restarted")
                    let first = try #require(try Self.takeTicks(from: queue, name: name).first)
                    if skips {
                        #expect(restarted.stderr.contains("skipped a tick missed by more than its maxLateness"))
                        #expect(
                            first > restart, "the first job after the restart is a tick to come: \(first) after \(last)"
                        )
                    } else {
                        #expect(first > last && first < restart, "the missed tick: \(first) after \(last)")
                        #expect(
                            restart.timeIntervalSince(first) < 4, "only the latest missed tick: \(first) after \(last)")
                        #expect(restarted.stderr.contains("late="))
                    }
                }
            }
        }

        @Test("a job queue that refuses jobs holds up its own schedules only, which catch up once it takes them again")
        func refusingQueue() async throws {
            try await Self.withFreshSchedule { queue, name in
                // Exclusive to another connection: the broker refuses the scheduler's publishes (405 RESOURCE_LOCKED).
                let locked = TestEnvironment.uniqueName("locked")
                let holder = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
                defer { holder.close() }
                try holder.openChannel(1)
                try holder.declareQueue(locked, durable: false, exclusive: true, channel: 1)
                let path = try TestEnvironment.temporaryDirectory().appendingPathComponent("two.json").path
                let json =
                    #"{"schedules": [{"name": "\#(name)", "every": 1, "type": "echo", "queue": "\#(queue)"}, "#
                    + #"{"name": "\#(name)-locked", "every": 1, "type": "echo", "queue": "\#(locked)"}]}"#
                try Data(json.utf8).write(to: URL(fileURLWithPath: path))
                let scheduler = try Self.startScheduler(path, name: "scheduler")
                defer { scheduler.terminate() }
                try scheduler.waitForStderr(containing: "cannot enqueue the jobs of job queue '\(locked)'")
                try Self.waitForJobs(in: queue, count: 5)
                #expect(!scheduler.stderr.contains("scheduler lost the broker"), "\(scheduler.stderr)")

                holder.close()
                try scheduler.waitForStderr(
                    containing: "skipped ticks missed while nothing enqueued them", timeout: .seconds(40))
                try Self.waitForJobs(in: locked, count: 2, timeout: .seconds(40))
                scheduler.signal(SIGTERM)
                #expect(scheduler.waitForExit() == 0)
                let ticks = try Self.takeTicks(from: queue, name: name)
                for (tick, next) in zip(ticks, ticks.dropFirst()) {
                    #expect(next.timeIntervalSince(tick) == 1, "the other schedule missed nothing: \(ticks)")
                }
                BrokerProbe.delete(locked)
            }
        }

        @Test("a scheduler whose first declaration the broker refuses keeps trying, and leads once it can")
        func refusedAtStart() async throws {
            try await Self.withFreshSchedule { queue, name in
                // warren.schedules exclusive to another connection: the broker refuses it to everyone else (405).
                let holder = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
                defer { holder.close() }
                try holder.openChannel(1)
                try holder.declareQueue(Topology.scheduleQueue, durable: false, exclusive: true, channel: 1)
                let scheduler = try Self.startScheduler(
                    try Self.scheduleFile(name: name, queue: queue), name: "scheduler")
                defer { scheduler.terminate() }
                try scheduler.waitForStderr(containing: "scheduler cannot reconnect")
                #expect(scheduler.process.isRunning)
                holder.close()
                try scheduler.waitForStderr(containing: "leading the schedules", timeout: .seconds(40))
                try Self.waitForJobs(in: queue, count: 1)
                scheduler.signal(SIGTERM)
                #expect(scheduler.waitForExit() == 0)
            }
        }

        @Test("a leader held up (SIGSTOP) enqueues the latest tick it missed when it goes on, and skips the others")
        func heldUp() async throws {
            try await Self.withFreshSchedule { queue, name in
                let scheduler = try Self.startScheduler(
                    try Self.scheduleFile(name: name, queue: queue), name: "scheduler")
                defer { scheduler.terminate() }
                try scheduler.waitForStderr(containing: "leading the schedules")
                try Self.waitForJobs(in: queue, count: 1)
                scheduler.signal(SIGSTOP)
                try await Task.sleep(for: .milliseconds(500))  // a publish already sent lands meanwhile
                let before = try Self.takeTicks(from: queue, name: name)
                try await Task.sleep(for: .seconds(4))
                scheduler.signal(SIGCONT)
                try scheduler.waitForStderr(containing: "skipped ticks missed while nothing enqueued them")
                try Self.waitForJobs(in: queue, count: 2)
                scheduler.signal(SIGTERM)
                #expect(scheduler.waitForExit() == 0)
                // The first tick after the stall is the latest it missed, not the oldest as well.
                let ticks = [try #require(before.last)] + (try Self.takeTicks(from: queue, name: name))
                let gaps = zip(ticks, ticks.dropFirst()).map { $1.timeIntervalSince($0) }
                #expect(gaps.first.map { $0 >= 3 } == true, "the ticks skipped first: \(ticks)")
                #expect(gaps.dropFirst().allSatisfy { $0 == 1 }, "then every tick: \(ticks)")
                let skipped = try #require(scheduler.stderr.firstMatch(of: /skipped=(\d+)/))
                #expect(gaps.first.map { Int($0) - 1 } == Int(skipped.1), "\(scheduler.stderr)")
            }
        }

        @Test(
            "another AMQP client can write the state (to skip ticks); what is no state is dead-lettered, and the leader goes on"
        )
        func foreignState() async throws {
            try await Self.withFreshSchedule { queue, name in
                let url = try TestEnvironment.brokerURL
                let dead = try MessageTap.deadLetters()
                let scheduler = try Self.startScheduler(
                    try Self.scheduleFile(name: name, queue: queue), name: "scheduler")
                defer { scheduler.terminate() }
                try scheduler.waitForStderr(containing: "leading the schedules")
                try Self.waitForJobs(in: queue, count: 1)

                try ForeignPublisher.publish(Array("not a state".utf8), url: url, routingKey: Topology.scheduleQueue)
                try scheduler.waitForStderr(
                    containing: "dead-lettered a message of warren.schedules that is not a schedule state")
                try dead.read(timeout: .seconds(30)) { $0.contains { $0.body == Array("not a state".utf8) } }
                let letter = try #require(dead.messages.first { $0.body == Array("not a state".utf8) })
                #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "malformedMessage")
                #expect(letter.properties.headers?[Topology.deadQueueHeader]?.stringValue == Topology.scheduleQueue)

                // Every tick up to five seconds from now counts as dealt with: the next job is a later tick's.
                let through = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) + 5)
                let text = through.formatted(.iso8601)
                let state = #"{"version": 1, "schedules": {"\#(name)": {"through": "\#(text)"}}}"#
                try ForeignPublisher.publish(Array(state.utf8), url: url, routingKey: Topology.scheduleQueue)
                try await Task.sleep(for: .seconds(1))
                _ = try Self.takeTicks(from: queue, name: name)
                try Self.waitForJobs(in: queue, count: 1)
                let next = try #require(try Self.takeTicks(from: queue, name: name).first)
                #expect(next > through, "\(next) after \(through)")
                #expect(!scheduler.stderr.contains("scheduler lost the broker"))
                scheduler.signal(SIGTERM)
                #expect(scheduler.waitForExit() == 0)
            }
        }

        @Test("--metrics-port: the leader's gauge is 1 and its counter moves, and it is ready; a standby's gauge is 0")
        func metrics() async throws {
            try await Self.withFreshSchedule { queue, name in
                let file = try Self.scheduleFile(name: name, queue: queue)
                let leader = try Self.startScheduler(file, name: "leader", arguments: ["--metrics-port", "0"])
                defer { leader.terminate() }
                try leader.waitForStderr(containing: "leading the schedules")
                let standby = try Self.startScheduler(file, name: "standby", arguments: ["--metrics-port", "0"])
                defer { standby.terminate() }
                try standby.waitForStderr(containing: "scheduler connected")
                let schedule = ["schedule": name]

                let led = try await MetricsScrape.fetch(try leader.metricsURL()) { metrics in
                    (metrics.value("warren_recurring_jobs_enqueued_total", schedule) ?? 0) >= 2
                }
                #expect(led.value("warren_scheduler_leading") == 1)
                let health = try await HealthScrape.fetch(try leader.metricsURL(), "/readyz")
                #expect(health.status == 200)
                #expect(health.component("scheduler")?["connection"] as? String == "connected")
                #expect((led.value("warren_recurring_jobs_enqueued_total", schedule) ?? 0) >= 2)
                #expect(led.value("warren_recurring_ticks_skipped_total", schedule) == 0)
                let waiting = try await MetricsScrape.fetch(try standby.metricsURL())
                #expect(waiting.value("warren_scheduler_leading") == 0)
                #expect(waiting.value("warren_recurring_jobs_enqueued_total", schedule) == 0)

                leader.signal(SIGTERM)
                #expect(leader.waitForExit() == 0)
                let took = try await MetricsScrape.fetch(try standby.metricsURL()) { metrics in
                    (metrics.value("warren_recurring_jobs_enqueued_total", schedule) ?? 0) >= 1
                }
                #expect(took.value("warren_scheduler_leading") == 1)
            }
        }

        @Test("warren worker --schedule runs the jobs it schedules; its /readyz reports the worker and the scheduler")
        func workerSchedules() async throws {
            try await Self.withFreshSchedule { queue, name in
                let tap = try MessageTap.results()
                let worker = try CLI.startWorker(
                    queue: queue,
                    arguments: ["--schedule", try Self.scheduleFile(name: name, queue: queue), "--metrics-port", "0"])
                defer { worker.terminate() }
                try tap.read(timeout: .seconds(30)) { _ in
                    tap.arrivedResults.filter { $0.jobID.hasPrefix("\(name):") && $0.status == .succeeded }.count >= 2
                }
                let health = try await HealthScrape.fetch(try worker.metricsURL(), "/readyz")
                #expect(health.status == 200)
                #expect(health.component("worker")?["ready"] as? Bool == true)
                #expect(health.component("scheduler")?["ready"] as? Bool == true)
                let result = try #require(tap.arrivedResults.first { $0.jobID.hasPrefix("\(name):") })
                #expect(result.output == ["tick": true])
                worker.signal(SIGTERM)
                #expect(worker.waitForExit() == 0)
                #expect(worker.stderr.contains("leading the schedules"))
            }
        }

        @Test("a bad schedule file is refused before anything connects, naming what is wrong")
        func badFile() throws {
            let path = try TestEnvironment.temporaryDirectory().appendingPathComponent("bad.json").path
            try Data(#"{"schedules": [{"name": "x", "type": "echo", "cron": "0 25 * * *"}]}"#.utf8).write(
                to: URL(fileURLWithPath: path))
            let run = try CLI.run(["schedule", path, "--url", "amqp://guest:guest@127.0.0.1:1/%2F"])
            #expect(run.status == 64)
            #expect(run.stderr.contains("schedules[0] ('x'): cron field 2 (hour)"), "\(run.stderr)")
            let worker = try CLI.run(["worker", "--schedule", path, "--url", "amqp://guest:guest@127.0.0.1:1/%2F"])
            #expect(worker.status == 64, "\(worker.stderr)")
        }

        @Test("--check prints the next ticks without a broker")
        func check() throws {
            let path = try TestEnvironment.temporaryDirectory().appendingPathComponent("check.json").path
            try Data(
                #"{"schedules": [{"name": "nightly", "type": "echo", "cron": "30 2 * * *", "timeZone": "America/New_York"}]}"#
                    .utf8
            )
            .write(to: URL(fileURLWithPath: path))
            let run = try CLI.run([
                "schedule", path, "--check", "--count", "2", "--url", "amqp://guest:guest@127.0.0.1:1/%2F",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.count == 3)
            #expect(lines.first == "nightly: echo on warren.default, cron 30 2 * * * (America/New_York)")
            #expect(lines.dropFirst().allSatisfy { $0.contains("T07:30:00Z") || $0.contains("T06:30:00Z") }, "\(lines)")
            #expect(
                lines.dropFirst().allSatisfy { $0.contains("02:30:00") && $0.hasSuffix("America/New_York)") },
                "\(lines)")
        }
    }
}
