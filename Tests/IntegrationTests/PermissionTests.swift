import AMQP
import Foundation
import Testing
import Warren

/// A broker that refuses part of what a worker or a producer does, to a user of its own or in a virtual host with
/// limits: the refusal is reported in the broker's words, and no job runs again and again because of it.
extension Integration {
    @Suite struct Permissions {
        /// A user of the test broker with `configure`, `write` and `read` permissions on `/`, and its URL; deleted
        /// by `body`'s end.
        private static func withUser(
            configure: String, write: String = ".*", read: String = ".*",
            _ body: (_ user: String, _ url: String) throws -> Void
        ) throws {
            let user = TestEnvironment.uniqueName("perm-user")
            try Chaos.brokerCtl(["add_user", user, "secret"])
            defer { try? Chaos.brokerCtl(["delete_user", user]) }
            try Chaos.brokerCtl(["set_permissions", "-p", "/", user, configure, write, read])
            try body(
                user, try TestEnvironment.brokerURL.replacingOccurrences(of: "guest:guest@", with: "\(user):secret@"))
        }

        private static func startWorker(url: String, queue: String) throws -> ChildProcess {
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                ["worker", "--url", url, "--queue", queue, "--worker-id", TestEnvironment.uniqueName("perm-worker")],
                name: "worker with few permissions")
            try worker.waitForStderr(containing: "worker started")
            return worker
        }

        /// The `configure`, `write` and `read` expressions of `role`'s row in the permissions table of
        /// docs/operations.md.
        private static func documentedPermissions(of role: String) throws -> [String] {
            let page = try String(
                contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
            let row = try #require(page.split(separator: "\n").first { $0.hasPrefix("| \(role) |") })
            let cells = row.replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|").map {
                $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "\u{0}", with: "|")
            }
            return try cells[2...4].map { cell in
                try #require(
                    cell.hasPrefix("`") && cell.hasSuffix("`") ? String(cell.dropFirst().dropLast()) : nil, "\(row)")
            }
        }

        @Test("the documented producer and monitor permissions are all their commands need, and refuse the rest")
        func documentedRoles() throws {
            let queue = TestEnvironment.uniqueName("perm-roles")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let state = ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path]
            let producer = try Self.documentedPermissions(of: "producer")
            let monitor = try Self.documentedPermissions(of: "monitor")
            #expect(
                producer == [
                    #"^amq\.gen-.*$"#, #"^(amq\.default|warren\.control)$"#, #"^(amq\.gen-.*|warren\.results)$"#,
                ])
            try Self.withUser(configure: producer[0], write: producer[1], read: producer[2]) { _, url in
                func run(_ arguments: [String]) throws -> String {
                    let output = try CLI.run(arguments + ["--url", url], environment: state)
                    #expect(output.status == 0, "\(arguments): \(output.stderr)")
                    return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                }
                let first = try run(["enqueue", "sleep", "--input", #"{"seconds":0.2}"#, "--queue", queue])
                _ = try run(["enqueue", "echo", "--depends-on", first, "--queue", queue, "--wait"])
                _ = try run(["enqueue", "echo", "--queue", queue, "--key", "roles", "--supersede"])
                let graph = try TestEnvironment.temporaryDirectory().appendingPathComponent("graph.json")
                try Data(
                    #"{"jobs": [{"name": "a", "type": "echo"}, {"name": "b", "type": "echo", "dependsOn": ["a"]}]}"#
                        .utf8
                )
                .write(to: graph)
                _ = try run(["enqueue", "--graph", graph.path, "--queue", queue])
                _ = try run(["cancel", first])
                // --wait that loses its connection reads the result from the results stream.
                let waiting = try ChildProcess(
                    TestEnvironment.warrenBinary,
                    ["enqueue", "sleep", "--input", #"{"seconds":1}"#, "--queue", queue, "--wait", "--url", url],
                    environment: state, name: "enqueue --wait as producer")
                defer { waiting.terminate() }
                let printed = ContinuousClock.now + .seconds(30)
                while waiting.stdout.isEmpty && ContinuousClock.now < printed { Thread.sleep(forTimeInterval: 0.02) }
                try worker.waitForStart(of: waiting.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
                try Integration.Chaos.closeConnections(
                    named: "warren producer \(waiting.process.processIdentifier)",
                    reason: "test: the producer loses the broker")
                #expect(waiting.waitForExit() == 0, "\(waiting.stderr)")
                #expect(waiting.stderr.contains("reading their results from the results stream"), "\(waiting.stderr)")
                // A job queue no worker made needs configure.
                let fresh = try CLI.run(
                    ["enqueue", "echo", "--queue", queue + "-new", "--url", url], environment: state)
                #expect(fresh.status == 1 && fresh.stderr.contains("ACCESS_REFUSED"), "\(fresh.stderr)")
            }
            try Self.withUser(configure: monitor[0], write: monitor[1], read: monitor[2]) { _, url in
                let status = try CLI.run(["status", "--queue", queue, "--url", url])
                #expect(
                    status.status == 0 && status.stdout.contains("queues=\(queue)"), "\(status.stdout)\(status.stderr)")
                let results = try CLI.run(["results", "--url", url])
                #expect(results.status == 0 && results.stdout.contains("succeeded"), "\(results.stderr)")
                let dead = try CLI.run(["dead", "list", "--url", url])
                #expect(dead.status == 0, "\(dead.stderr)")
                let enqueue = try CLI.run(["enqueue", "echo", "--queue", queue, "--url", url])
                #expect(enqueue.status == 1 && enqueue.stderr.contains("ACCESS_REFUSED"), "\(enqueue.stderr)")
            }
        }

        @Test("dead requeue without read on warren.dead.watch requeues, and warns that the letters' copies stay")
        func requeueWithoutTheCopies() throws {
            let queue = TestEnvironment.uniqueName("perm-requeue")
            defer { BrokerProbe.delete(queue) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            let (id, _) = try Retries.expiredJob(in: queue, on: connection, copied: true)
            defer { BrokerProbe.discardDeadLetterCopies(of: [id]) }
            try Self.withUser(configure: "^$", write: #"^amq\.default$"#, read: #"^warren\.dead$"#) { _, url in
                let requeue = try CLI.run(["dead", "requeue", id, "--url", url])
                #expect(requeue.status == 0, "\(requeue.stderr)")
                #expect(requeue.stdout.contains("requeued \(id) to \(queue)"), "\(requeue.stdout)")
                #expect(
                    requeue.stderr.contains("the copies of the requeued letters stay in warren.dead.watch")
                        && requeue.stderr.contains("ACCESS_REFUSED"),
                    "\(requeue.stderr)")
            }
            #expect(try BrokerProbe.depth(of: queue) == 1)
        }

        @Test("a retry whose delay queue the broker refuses is held, not run again at once, until it is allowed")
        func refusedDelayQueue() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("perm-delay")
            defer { BrokerProbe.delete(queue) }
            try Self.withUser(configure: #"^(?!warren\.delay\.).*"#) { user, restricted in
                let worker = try Self.startWorker(url: restricted, queue: queue)
                defer { worker.terminate() }
                let waiting = try ChildProcess(
                    TestEnvironment.warrenBinary,
                    [
                        "enqueue", "fail", "--input", #"{"retryable":true}"#, "--max-attempts", "2", "--queue", queue,
                        "--wait", "--timeout", "60", "--json", "--url", url,
                    ],
                    name: "enqueue --wait")
                defer { waiting.terminate() }
                try worker.waitForStderr(
                    containing: "the broker refuses a delay queue; holding jobs to delay until it accepts it")
                #expect(worker.stderr.contains("ACCESS_REFUSED"), "\(worker.stderr)")
                // Held through the next look at it (every 5 s), where it used to come back at once, over and over.
                Thread.sleep(forTimeInterval: 6)
                #expect(worker.stderr.components(separatedBy: "job failed; retrying").count == 2, "\(worker.stderr)")
                #expect(!worker.stderr.contains("lost the broker"), "\(worker.stderr)")

                try Chaos.brokerCtl(["set_permissions", "-p", "/", user, ".*", ".*", ".*"])
                #expect(waiting.waitForExit() == 3, "the second attempt failed for good: \(waiting.stderr)")
                #expect(waiting.stdout.contains(#""attempt":2"#), "\(waiting.stdout)")
                #expect(worker.stderr.components(separatedBy: "job failed; retrying").count == 2, "\(worker.stderr)")
            }
        }

        @Test("a retry held because its delay queue is refused can be cancelled meanwhile")
        func cancelHeldRetry() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("perm-delay-cancel")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            try Self.withUser(configure: #"^(?!warren\.delay\.).*"#) { _, restricted in
                let worker = try Self.startWorker(url: restricted, queue: queue)
                defer { worker.terminate() }
                let job = try Producer.forTests().enqueue(
                    JobRequest(type: "fail", input: ["retryable": true], queue: queue, maxAttempts: 2))
                try worker.waitForStderr(
                    containing: "the broker refuses a delay queue; holding jobs to delay until it accepts it")
                let status = try CLI.run(["status", "--jobs", "--queue", queue, "--url", url])
                #expect(status.stdout.contains("job \(job.id) type=fail held for "), "\(status.stdout)")
                let cancel = try CLI.run(["cancel", job.id, "--url", url])
                #expect(cancel.status == 0, "\(cancel.stderr)")
                let result = try tap.waitForResult(job.id, timeout: .seconds(30))
                #expect(result.status == .cancelled, "\(result)")
            }
        }

        @Test(
            "a result the broker refuses to take makes the worker reconnect with growing waits, and is kept for the job"
        )
        func refusedResultBacksOff() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("perm-result")
            defer { BrokerProbe.delete(queue) }
            try Self.withUser(configure: ".*") { user, restricted in
                // The user may publish to the results exchange only with routing key `x`: no result's.
                try Chaos.brokerCtl(["set_topic_permissions", "-p", "/", user, "warren.results", "^x$", ".*"])
                let worker = try Self.startWorker(url: restricted, queue: queue)
                defer { worker.terminate() }
                // No reply queue: the result goes to the results exchange.
                let enqueued = try CLI.run(["enqueue", "echo", "--input", "1", "--queue", queue, "--url", url])
                let id = enqueued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                // Each loss soon after a reconnect waits twice as long as the one before.
                for delay in [200, 400, 800] {
                    let deadline = ContinuousClock.now + .seconds(30)
                    while !worker.stderr.split(separator: "\n").contains(where: {
                        $0.contains("delayMs=\(delay) ") && $0.hasSuffix("waiting before reconnecting")
                    }) {
                        try #require(ContinuousClock.now < deadline, "no wait of \(delay) ms:\n\(worker.stderr)")
                        Thread.sleep(forTimeInterval: 0.05)
                    }
                }
                #expect(!worker.stderr.contains("delayMs=100 "), "\(worker.stderr)")

                try Chaos.brokerCtl(["clear_topic_permissions", "-p", "/", user])
                let deadline = ContinuousClock.now + .seconds(60)
                var stored = ""
                while !stored.contains("succeeded \(id)") && ContinuousClock.now < deadline {
                    stored = try CLI.run(["results", "--job", id, "--idle", "1", "--url", url]).stdout
                }
                #expect(stored.contains("succeeded \(id)"), "the result kept for the job came: \(worker.stderr)")
            }
        }

        @Test("a scheduler the broker refuses to let set up exits 1 at once, as a worker does")
        func refusedScheduler() throws {
            // A virtual host of its own, where warren.schedules does not exist yet (one that does is only looked up).
            let vhost = TestEnvironment.uniqueName("perm-schedules")
            try Chaos.brokerCtl(["add_vhost", vhost])
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            try Self.withUser(configure: #"^(?!warren\.schedules$).*"#) { user, url in
                try Chaos.brokerCtl(["set_permissions", "-p", vhost, user, #"^(?!warren\.schedules$).*"#, ".*", ".*"])
                let restricted = url.replacingOccurrences(of: "/%2F", with: "/\(vhost)")
                let file = try TestEnvironment.temporaryDirectory().appendingPathComponent("schedules.json")
                try Data(#"{"schedules": [{"name": "perm", "type": "echo", "every": 60}]}"#.utf8).write(to: file)
                let scheduler = try CLI.run(["schedule", file.path, "--url", restricted])
                #expect(scheduler.status == 1, "\(scheduler.stderr)")
                #expect(scheduler.stderr.contains("cannot set up at"), "\(scheduler.stderr)")
                #expect(scheduler.stderr.contains("ACCESS_REFUSED"), "\(scheduler.stderr)")
            }
        }

        @Test("a connection limit is named as the broker names it, and a worker waits for a free connection")
        func connectionLimit() throws {
            let queue = TestEnvironment.uniqueName("perm-limit")
            defer { BrokerProbe.delete(queue) }
            try Self.withUser(configure: ".*") { user, restricted in
                try Chaos.brokerCtl(["set_user_limits", user, #"{"max-connections": 1}"#])
                let worker = try Self.startWorker(url: restricted, queue: queue)
                defer { worker.terminate() }
                let refused = try CLI.run(["enqueue", "echo", "--queue", queue, "--url", restricted])
                #expect(refused.status == 1, "\(refused.stderr)")
                #expect(refused.stderr.contains("a connection limit is reached"), "\(refused.stderr)")
                #expect(refused.stderr.contains("user connection limit (1) is reached"), "\(refused.stderr)")
                // A second worker waits for a connection, as for a broker not up yet, and connects once the first
                // has gone.
                let second = try ChildProcess(
                    TestEnvironment.warrenBinary,
                    [
                        "worker", "--url", restricted, "--queue", queue, "--worker-id",
                        TestEnvironment.uniqueName("perm-second"),
                    ],
                    name: "second worker")
                defer { second.terminate() }
                try second.waitForStderr(containing: "cannot connect; trying again")
                worker.signal(SIGTERM)
                #expect(worker.waitForExit() == 0)
                try second.waitForStderr(containing: "worker started")
            }
        }

        @Test("a graph the broker partly refuses prints the jobs it took; jobs it refused are unknown to dependents")
        func partlyRefusedGraph() throws {
            let url = try TestEnvironment.brokerURL
            let open = TestEnvironment.uniqueName("perm-open")
            let full = TestEnvironment.uniqueName("perm-full")
            defer { [open, full].forEach(BrokerProbe.delete) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            _ = try connection.declareQueue(
                full, durable: false, arguments: ["x-max-length": .int(0), "x-overflow": "reject-publish"], channel: 1)
            let state = try TestEnvironment.temporaryDirectory()
            let environment = ["WARREN_STATE_DIR": state.path]
            let graph = state.appendingPathComponent("graph.json")
            try Data(
                #"{"jobs": [{"name": "a", "type": "echo", "queue": "\#(open)"}, {"name": "b", "type": "echo", "queue": "\#(full)"}]}"#
                    .utf8
            ).write(to: graph)
            let enqueued = try CLI.run(["enqueue", "--graph", graph.path, "--url", url], environment: environment)
            #expect(enqueued.status == 1, "\(enqueued.stderr)")
            #expect(enqueued.stderr.contains("the broker refused job 'b' for queue '\(full)'"), "\(enqueued.stderr)")
            let lines = enqueued.stdout.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.hasPrefix("a ") == true, "\(enqueued.stdout)")
            let a = String(lines.first?.dropFirst(2) ?? "")
            #expect(try BrokerProbe.depth(of: open) == 1)
            // b's id was taken back from the journal: a dependent of b is refused, one of a is not.
            let journal = try String(contentsOf: state.appendingPathComponent("journal"), encoding: .utf8)
            let b = try #require(journal.split(separator: "\n").first { $0.hasPrefix("~") }?.dropFirst())
            let onB = try CLI.run(
                ["enqueue", "echo", "--depends-on", String(b), "--queue", open, "--url", url], environment: environment)
            #expect(onB.status == 64 && onB.stderr.contains("unknown job \(b)"), "\(onB.stderr)")
            let onA = try CLI.run(
                ["enqueue", "echo", "--depends-on", a, "--queue", open, "--url", url], environment: environment)
            #expect(onA.status == 0, "\(onA.stderr)")

            // A user who may not write to the default exchange has no job taken, and the journal knows it.
            try Self.withUser(configure: ".*", write: #"^warren\.control$"#) { _, restricted in
                let refused = try CLI.run(
                    ["enqueue", "echo", "--queue", open, "--url", restricted], environment: environment)
                #expect(refused.status == 1, "\(refused.stderr)")
                #expect(refused.stderr.contains("no job of the call was enqueued"), "\(refused.stderr)")
                #expect(refused.stdout.isEmpty, "no id is printed as enqueued or unconfirmed: \(refused.stdout)")
            }
        }

        @Test("a virtual host's queue limit is reported in the broker's words, not as a deleted or foreign queue")
        func queueLimit() throws {
            let (vhost, url) = try Chaos.addVirtualHost("perm-vhost")
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            // Room for the dead-letter queue and one job queue.
            try Chaos.brokerCtl(["set_vhost_limits", "-p", vhost, #"{"max-queues": 2}"#])
            let state = try TestEnvironment.temporaryDirectory()
            let first = try CLI.run(
                ["enqueue", "echo", "--queue", "first", "--url", url], environment: ["WARREN_STATE_DIR": state.path])
            #expect(first.status == 0, "\(first.stderr)")
            for arguments in [
                ["enqueue", "echo", "--queue", "second"],
                ["enqueue", "echo", "--queue", "first", "--key", "k", "--unique-for", "1m"],
            ] {
                let refused = try CLI.run(arguments + ["--url", url], environment: ["WARREN_STATE_DIR": state.path])
                #expect(refused.status == 1, "\(arguments): \(refused.stderr)")
                #expect(
                    refused.stderr.contains("queue limit in vhost '\(vhost)' (2) is reached"),
                    "\(arguments): \(refused.stderr)")
                #expect(!refused.stderr.contains("deleted") && !refused.stderr.contains("not as Warren declares"))
            }
            // The journal knows the job enqueued, not those refused before they left (dependents would wait forever).
            let journal = try String(contentsOf: state.appendingPathComponent("journal"), encoding: .utf8)
            #expect(journal == first.stdout, "\(journal)")
        }
    }
}
