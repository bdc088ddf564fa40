import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Retries {
        @Test("a retryable failure runs again after a backoff, and succeeds on a later attempt: one result")
        func retriedUntilSuccess() throws {
            let queue = TestEnvironment.uniqueName("retry")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try Producer.forTests().enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true, "succeedFromAttempt": 3], queue: queue, maxAttempts: 5))
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .succeeded)
            #expect(result.attempt == 3)
            #expect(result.output?["attempt"] == 3)
            try tap.settle()
            #expect(tap.results(for: job.id).count == 1, "attempts that are retried publish no result")
            let lines = worker.stderr.split(separator: "\n").filter { $0.contains("job=\(job.id)") }
            func number(_ name: String, in line: Substring) -> Int? {
                line.split(separator: " ").first { $0.hasPrefix("\(name)=") }.flatMap {
                    Int($0.dropFirst(name.count + 1))
                }
            }
            let retries = lines.filter { $0.hasSuffix("job failed; retrying") }
            let waits = retries.compactMap { number("delayMs", in: $0) }
            let hops = retries.compactMap { number("hopMs", in: $0) }
            #expect(waits.count == 2 && hops.count == 2)
            // A backoff goes in hops too: the first is the longest delay queue that does not pass the wait, rather
            // than the next longer one with a shorter expiration, where it would wait behind messages that expire
            // later. The rest waits in later hops. (The second wait is 1.5 to 2.5 s: a hop of 1 or 2 s.)
            // A wait under a second goes in one hop of its own length.
            for (wait, hop) in zip(waits, hops) {
                let delayQueueLength = Topology.delayQueueSeconds.contains { $0 * 1000 == hop }
                #expect(wait < 1000 ? hop == wait : delayQueueLength && hop <= wait, "waits \(waits), hops \(hops)")
            }
        }

        @Test(
            "a handler's retryAfter: the next attempt starts no sooner, after hops; a retry past the deadline is not made"
        )
        func retryAfter() throws {
            let queue = TestEnvironment.uniqueName("retry-after")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            // 2.5 s: a 2 s hop, then what is left, the not-before header carried through both.
            let enqueued = Date()
            let job = try producer.enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true, "retryAfter": 2.5, "succeedFromAttempt": 2], queue: queue))
            let result = try tap.waitForResult(job.id, timeout: .seconds(30))
            #expect(result.status == .succeeded && result.attempt == 2)
            let started = try #require(result.timings.startedAt)
            #expect(
                started.timeIntervalSince(enqueued) >= 2.5,
                "the retry started \(started.timeIntervalSince(enqueued)) s after")
            let line = try #require(
                worker.stderr.split(separator: "\n").first { $0.contains("job=\(job.id)") && $0.hasSuffix("retrying") })
            #expect(line.contains("delayMs=2500"), "\(line)")
            #expect(worker.stderr.contains("hopMs="), "the rest of the wait is a hop of its own")

            // A wait that ends after the job's deadline: the failure is final, at once.
            let late = try producer.enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true, "retryAfter": 60, "code": "rateLimited"], queue: queue,
                    deadline: Date().addingTimeInterval(20)))
            let final = try tap.waitForResult(late.id, timeout: .seconds(15))
            #expect(final.status == .failed && final.attempt == 1 && final.error?.code == "rateLimited")
            #expect(final.error?.retryable == true)
            // The backoff too: attempt 2 fails about 1 s in, and its 1.5–2.5 s backoff would end past the deadline.
            let backoff = try producer.enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true], queue: queue, deadline: Date().addingTimeInterval(2),
                    maxAttempts: 5))
            let ended = try tap.waitForResult(backoff.id, timeout: .seconds(15))
            #expect(ended.status == .failed && ended.attempt == 2 && ended.error?.code == "requestedFailure")
            #expect(ended.timings.startedAt != nil, "it ran, and says so")
            let bad = try producer.enqueue(
                JobRequest(type: "fail", input: ["retryable": true, "retryAfter": -1], queue: queue))
            #expect(try tap.waitForResult(bad.id).error?.code == "invalidInput")
        }

        @Test("warren dead list counts every letter right after another listing put them back")
        func countAfterListing() throws {
            // A virtual host of its own: a dead letter queue holding these letters only.
            let (vhost, url) = try Chaos.addVirtualHost("dead-count")
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            try Topology.declareDeadLetters(on: connection, channel: 1)
            for number in 0..<3_000 {
                try connection.publish(
                    Array(#"{"id": "letter-\#(number)"}"#.utf8), exchange: "", routingKey: Topology.deadQueue,
                    properties: MessageProperties(persistent: true), channel: 1)
            }
            let settled = ContinuousClock.now + .seconds(30)
            while try connection.declareQueue(Topology.deadQueue, passive: true, channel: 1).messageCount < 3_000,
                ContinuousClock.now < settled
            {
                Thread.sleep(forTimeInterval: 0.05)
            }
            for _ in 1...3 {
                let listed = try CLI.run(["dead", "list", "--limit", "2000", "--url", url])
                #expect(listed.stderr == "2000 of 3000 dead letter(s) (--limit 2000)\n", "\(listed.stderr)")
                let counted = try CLI.run(["dead", "list", "--limit", "0", "--url", url])
                #expect(counted.stderr == "0 of 3000 dead letter(s) (--limit 0)\n", "\(counted.stderr)")
            }
        }

        @Test(
            "a job whose dead letter a full warren.dead refuses is held, not run again; with room, it is dead-lettered")
        func deadLetterRefused() throws {
            // A virtual host of its own, whose warren.dead a policy keeps full.
            let (vhost, url) = try Chaos.addVirtualHost("dead-full")
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            try Chaos.brokerCtl([
                "set_policy", "-p", vhost, "full", "^warren\\.dead$", #"{"max-length":0,"overflow":"reject-publish"}"#,
                "--apply-to", "queues",
            ])
            let queue = TestEnvironment.uniqueName("dead-full")
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                ["worker", "--url", url, "--queue", queue, "--worker-id", TestEnvironment.uniqueName("dead-full")],
                name: "worker of a full warren.dead")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            let job = try Producer.forTests(url: url).enqueue(
                JobRequest(type: "fail", input: ["message": "refused"], queue: queue))
            try worker.waitForStderr(containing: "holding the job, and publishing its dead letter again every 5 s")
            let status = try CLI.run(["status", "--jobs", "--url", url])
            #expect(status.stdout.contains("job \(job.id) type=fail held for"), "\(status.stdout)")
            // Two more tries of the dead letter: the job itself ran once.
            Thread.sleep(forTimeInterval: 11)
            #expect(worker.stderr.components(separatedBy: "job failed").count - 1 == 1, "one run: \(worker.stderr)")
            try Chaos.brokerCtl(["clear_policy", "-p", vhost, "full"])
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            let lettered = ContinuousClock.now + .seconds(30)
            while try connection.declareQueue(Topology.deadQueue, passive: true, channel: 1).messageCount == 0,
                ContinuousClock.now < lettered
            {
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(try connection.declareQueue(Topology.deadQueue, passive: true, channel: 1).messageCount == 1)
            #expect(try connection.declareQueue(queue, passive: true, channel: 1).messageCount == 0, "acked")
            #expect(worker.stderr.components(separatedBy: "job failed").count - 1 == 1)
        }

        @Test("the last retryable failure is dead-lettered; warren dead list shows it and dead requeue replays it")
        func exhaustedThenRequeued() throws {
            let queue = TestEnvironment.uniqueName("exhaust")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try Producer.forTests().enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true, "code": "flaky", "succeedFromAttempt": 4], queue: queue,
                    maxAttempts: 2))
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .failed)
            #expect(result.error?.code == "flaky")
            #expect(result.attempt == 2)
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == job.id } }

            let list = try CLI.run(["dead", "list", "--url", url])
            #expect(list.status == 0, "\(list.stderr)")
            let line = try #require(list.stdout.split(separator: "\n").first { $0.hasPrefix(job.id) })
            #expect(line.contains("reason=flaky"))
            #expect(line.contains("queue=\(queue)"))
            #expect(line.contains("type=fail"))
            // Both streams into one file, as `warren dead list > file 2>&1` does: the letters, then the count.
            let shell = try ChildProcess(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "exec \"$0\" dead list --url \"$1\" 2>&1", TestEnvironment.warrenBinary.path, url])
            #expect(shell.waitForExit() == 0)
            #expect(shell.stdout.hasSuffix(" dead letter(s)\n"), "\(shell.stdout)")
            #expect(shell.stdout.contains(job.id), "listing keeps the letters")
            // --json: the letters on stdout, the count on stderr all the same; --limit 0 only counts them.
            let counted = try CLI.run(["dead", "list", "--json", "--limit", "0", "--url", url])
            #expect(counted.status == 0 && counted.stdout.isEmpty, "\(counted.stdout)")
            #expect(
                counted.stderr.hasPrefix("0 of ") && counted.stderr.hasSuffix(" dead letter(s) (--limit 0)\n"),
                "\(counted.stderr)")

            let requeue = try CLI.run(["dead", "requeue", job.id, "--url", url])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            #expect(requeue.stdout.contains("requeued \(job.id) to \(queue)"))
            // Replayed with a fresh attempt count: attempts 1 and 2 fail again, and it is dead-lettered again.
            try tap.read(timeout: .seconds(60)) { _ in tap.results(for: job.id).count == 2 }
            #expect(tap.results(for: job.id).map(\.attempt) == [2, 2])
            let after = try CLI.run(["dead", "list", "--url", url])
            #expect(after.stdout.components(separatedBy: job.id).count - 1 == 1, "one letter for the job, not two")

            let missing = try CLI.run(["dead", "requeue", "no-such-job", "--url", url])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("no dead letter for job no-such-job"))
        }

        @Test(
            "dead requeue of letters bound for a quorum, a priority and a classic queue: confirmed in any order, all moved"
        )
        func requeueToMixedQueues() throws {
            let url = try TestEnvironment.brokerURL
            let queues = [
                (TestEnvironment.uniqueName("mixed-quorum"), false, true),
                (TestEnvironment.uniqueName("mixed-priority"), true, false),
                (TestEnvironment.uniqueName("mixed-classic"), false, false),
            ]
            defer { queues.forEach { BrokerProbe.delete($0.0) } }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            for (queue, priorities, quorum) in queues {
                try Topology.declareJobQueue(queue, priorities: priorities, quorum: quorum, on: connection, channel: 1)
            }
            // Interleaved, so that the quorum queue's slower confirms come after the others' later ones.
            var ids: [String] = []
            for round in 0..<10 {
                for (queue, _, _) in queues {
                    let id = TestEnvironment.uniqueName("mixed-\(round)")
                    ids.append(id)
                    try connection.publish(
                        Array(#"{"version":1,"id":"\#(id)","type":"echo"}"#.utf8), exchange: Topology.deadExchange,
                        routingKey: queue,
                        properties: MessageProperties(
                            contentType: "application/json",
                            headers: [Topology.deadQueueHeader: .string(queue), Topology.deadReasonHeader: "test"],
                            persistent: true),
                        channel: 1)
                }
            }
            let requeue = try CLI.run(["dead", "requeue", "--url", url] + ids, timeout: .seconds(45))
            #expect(requeue.status == 0, "\(requeue.stderr)")
            #expect(requeue.stdout.split(separator: "\n").count == ids.count, "\(requeue.stdout)")
            for (queue, _, _) in queues { #expect(try BrokerProbe.depth(of: queue) == 10, "\(queue)") }
            let list = try CLI.run(["dead", "list", "--url", url])
            #expect(!ids.contains { list.stdout.contains($0) }, "a requeued letter stayed in warren.dead")
        }

        @Test("dead requeue of a job the broker expired: back in its queue without the broker's dead-letter headers")
        func requeuedAfterExpiry() throws {
            let queue = TestEnvironment.uniqueName("expired")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            let (id, letter) = try Self.expiredJob(in: queue, on: connection)
            defer { BrokerProbe.discardDeadLetterCopies(of: [id]) }
            #expect(letter.properties.headers?["x-first-death-reason"]?.stringValue == "expired")

            let requeue = try CLI.run(["dead", "requeue", id, "--url", url])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            let back = try #require(try connection.get(queue, noAck: true, channel: 1))
            let headers = back.properties.headers ?? [:]
            for name in ["x-death", "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason"] {
                #expect(headers[name] == nil, "\(name)")
            }
            #expect(headers["x-trace"]?.stringValue == "kept")
            #expect(headers[Topology.attemptHeader]?.intValue == 1)
            #expect(back.properties.expiration == nil)
        }

        @Test("dead requeue to a queue that refuses the copy names the job and its queue; that letter stays, others go")
        func requeueRefused() throws {
            let queue = TestEnvironment.uniqueName("requeue-full")
            let open = TestEnvironment.uniqueName("requeue-open")
            let policy = TestEnvironment.uniqueName("requeue-full")
            defer {
                BrokerProbe.delete(queue)
                BrokerProbe.delete(open)
            }
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            let (id, _) = try Self.expiredJob(in: queue, on: connection)
            let another = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { another.close() }
            let (other, _) = try Self.expiredJob(in: open, on: another)
            defer { BrokerProbe.discardDeadLetterCopies(of: [id, other]) }
            try Chaos.brokerCtl([
                "set_policy", policy, "^\(queue)$", #"{"max-length":0,"overflow":"reject-publish"}"#,
                "--apply-to", "queues",
            ])
            defer { try? Chaos.brokerCtl(["clear_policy", policy]) }
            let applied = ContinuousClock.now + .seconds(60)
            while try !CommandLine.queuePolicies().contains("\(queue)\t\(policy)"), ContinuousClock.now < applied {
                Thread.sleep(forTimeInterval: 0.2)
            }
            let requeue = try CLI.run(["dead", "requeue", id, other, "--url", url])
            #expect(requeue.status == 1)
            #expect(
                requeue.stderr.contains("\(id) stays dead: the broker refused its copy for queue '\(queue)'"),
                "\(requeue.stderr)")
            #expect(requeue.stdout == "requeued \(other) to \(open)\n", "\(requeue.stdout)")
            #expect(try BrokerProbe.depth(of: open) == 1)
            let listed = try CLI.run(["dead", "list", "--url", url])
            #expect(listed.stdout.contains(id), "the refused letter stays")
            #expect(!listed.stdout.contains(other), "the requeued letter left warren.dead: its job is not there twice")
        }

        @Test("dead requeue ID requeues that job's oldest letter and reads warren.dead no further than it")
        func requeueStopsAtTheLetter() throws {
            let queue = TestEnvironment.uniqueName("requeue-early")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            try Topology.declareJobQueue(queue, priorities: false, on: connection, channel: 1)
            let dead = try MessageTap.deadLetters()
            let (before, wanted) = (TestEnvironment.uniqueName("before"), TestEnvironment.uniqueName("wanted"))
            let after = (0..<50).map { TestEnvironment.uniqueName("after-\($0)") }
            // The wanted job has two letters, as a duplicate delivery of one job makes.
            let letters = [before, wanted, wanted] + after
            for id in letters {
                try connection.publish(
                    Array(#"{"version":1,"id":"\#(id)","type":"echo"}"#.utf8), exchange: Topology.deadExchange,
                    routingKey: queue,
                    properties: MessageProperties(
                        contentType: "application/json",
                        headers: [Topology.deadQueueHeader: .string(queue), Topology.deadReasonHeader: "test"],
                        persistent: true, messageID: id),
                    channel: 1)
            }
            try dead.read(timeout: .seconds(30)) { _ in dead.messages.count >= letters.count }

            let requeue = try CLI.run(["dead", "requeue", wanted, "--url", url])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            #expect(requeue.stdout.contains("requeued \(wanted) to \(queue)"), "\(requeue.stdout)")
            #expect(try BrokerProbe.depth(of: queue) == 1)
            // What the requeue took and left went back, and comes again marked redelivered; what it did not reach
            // comes for the first time. (All go back to warren.dead as the connection closes.)
            var redelivered: [String: [Bool]] = [:]
            while let delivery = try connection.get(Topology.deadQueue, channel: 1) {
                guard let id = delivery.properties.messageID, letters.contains(id) else { continue }
                redelivered[id, default: []].append(delivery.redelivered)
            }
            #expect(redelivered[before] == [true])
            #expect(redelivered[wanted] == [false], "the later letter of the same job stays, untouched")
            #expect(after.allSatisfy { redelivered[$0] == [false] }, "\(redelivered)")
        }

        /// Declares `queue` as Warren declares job queues, publishes there a job the broker expires at once, and waits
        /// for its dead letter; returns the job's id and the letter. With `copied`, first makes sure that
        /// ``Topology/deadWatchQueue`` exists, as a worker makes it, so that it gets a copy of the letter.
        static func expiredJob(
            in queue: String, on connection: AMQPConnection, copied: Bool = false
        ) throws -> (id: String, letter: Delivery) {
            try connection.openChannel(1)
            try Topology.declareJobQueue(queue, priorities: false, on: connection, channel: 1)
            if copied {
                _ = try Topology.declareDeadLetters(on: connection, channel: 1)
                if try Topology.lookUp(Topology.deadWatchQueue, on: connection) == nil {
                    _ = try connection.declareQueue(Topology.deadWatchQueue, channel: 1)
                }
                try connection.bindQueue(Topology.deadWatchQueue, to: Topology.deadExchange, channel: 1)
            }
            let dead = try MessageTap.deadLetters()
            let id = TestEnvironment.uniqueName("expires")
            try connection.publish(
                Array(#"{"version":1,"id":"\#(id)","type":"echo"}"#.utf8), exchange: "", routingKey: queue,
                properties: MessageProperties(
                    contentType: "application/json", headers: ["x-trace": "kept"], persistent: true, expiration: "1",
                    messageID: id),
                channel: 1)
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == id } }
            return (id, try #require(dead.messages.first { $0.properties.messageID == id }))
        }
    }
}
