import AMQP
import Foundation
import Synchronization
import Testing
import Warren

extension Integration {
    @Suite struct UniqueJobs {
        /// Whether the lock of `key` is held: its queue holds a token.
        static func isHeld(_ key: String) -> Bool {
            ((try? BrokerProbe.depth(of: UniqueLock.queue(forKey: key))) ?? 0) > 0
        }

        @Test("a unique job is enqueued only while no job of its key holds the lock; its result means the lock is free")
        func heldUntilTheResult() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("unique")
            let idle = TestEnvironment.uniqueName("unique-idle")
            let key = TestEnvironment.uniqueName("report")
            defer {
                [queue, idle, UniqueLock.queue(forKey: key), UniqueLock.queue(forKey: key + "-other")]
                    .forEach(BrokerProbe.delete)
            }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let first = JobRequest(
                type: "sleep", input: ["seconds": 3], key: key, queue: queue, uniqueFor: .seconds(60))
            #expect(try producer.enqueue(first).unique == true)
            #expect(try BrokerProbe.depth(of: UniqueLock.queue(forKey: key)) == 1)

            let again = JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(60))
            let refused = #expect(throws: WarrenError.self) { try producer.enqueue(again) }
            #expect(refused?.code == .duplicate)
            #expect(
                refused?.message == "job \(again.id) not enqueued: another job of key '\(key)' holds the key's unique "
                    + "lock (queue 'warren.unique.\(key)'), until it ends or the lock expires")
            // All or nothing: the plain job of the same call is not enqueued either.
            let plain = JobRequest(type: "echo", queue: idle)
            let batch = #expect(throws: WarrenError.self) { try producer.enqueue([plain, again]) }
            #expect(batch?.code == .duplicate)
            #expect(batch?.message.hasSuffix("; no job of this call was enqueued") == true)
            #expect((try? BrokerProbe.depth(of: idle)) ?? 0 == 0)
            let cli = try CLI.run([
                "enqueue", "echo", "--key", key, "--unique-for", "1m", "--queue", queue, "--url", url,
            ])
            #expect(cli.status == 6, "\(cli.stderr)")
            #expect(cli.stdout.isEmpty && cli.stderr.contains("holds the key's unique lock"), "\(cli.stderr)")
            let status = try CLI.run(["status", "--jobs", "--queue", queue, "--url", url])
            let line = status.stdout.split(separator: "\n").first { $0.contains("job \(first.id) ") }
            #expect(line?.hasSuffix(" unique") == true || line?.contains(" unique ") == true, "\(status.stdout)")
            // Another key, and the same key without uniqueness, are not held back.
            try producer.enqueue(JobRequest(type: "echo", key: key + "-other", queue: queue, uniqueFor: .seconds(60)))
            try producer.enqueue(JobRequest(type: "echo", key: key, queue: queue))

            // Seen its result, the next job of the key is enqueued at once.
            #expect(try tap.waitForResults([first.id]).first?.status == .succeeded)
            let next = JobRequest(type: "echo", input: "next", key: key, queue: queue, uniqueFor: .seconds(60))
            try producer.enqueue(next)
            #expect(try tap.waitForResults([next.id]).first?.status == .succeeded)
            // The last release took the token back; the queue stays, empty, until it goes unused for 8 days.
            #expect(!Self.isHeld(key))
            #expect(!Self.isHeld(key + "-other"))
            #expect(try BrokerProbe.depth(of: queue) == 0)
        }

        @Test("the lock holds across retries, and a failure, a cancellation or a dead letter (even unread) releases it")
        func endsForGood() throws {
            let queue = TestEnvironment.uniqueName("unique-ends")
            let key = TestEnvironment.uniqueName("ends")
            defer { [queue, UniqueLock.queue(forKey: key)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "4"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            func unique(_ type: String, _ input: JSONValue = .null, maxAttempts: Int? = nil) -> JobRequest {
                JobRequest(
                    type: type, input: input, key: key, queue: queue, maxAttempts: maxAttempts, uniqueFor: .seconds(60))
            }

            // A retryable failure: the job waits in a delay queue between its two attempts, and keeps the lock.
            let failing = unique("fail", ["retryable": true], maxAttempts: 2)
            try producer.enqueue(failing)
            try worker.waitForStderr(containing: "job failed; retrying")
            #expect(throws: WarrenError.self) { try producer.enqueue(unique("echo")) }
            let failed = try tap.waitForResults([failing.id])
            #expect(failed.map(\.status) == [.failed] && failed.first?.attempt == 2)

            // Cancelled while it waits behind a job on the worker's one thread.
            let blocker = JobRequest(type: "sleep", input: ["seconds": 30], queue: queue)
            try producer.enqueue(blocker)
            try worker.waitForStart(of: blocker.id)
            let waiting = unique("echo")
            try producer.enqueue(waiting)
            try producer.cancel(jobIDs: [waiting.id])
            #expect(try tap.waitForResults([waiting.id]).first?.status == .cancelled)
            try producer.cancel(jobIDs: [blocker.id])

            // Dead-lettered: no worker runs the type.
            let unknown = unique("nope")
            try producer.enqueue(unknown)
            #expect(try tap.waitForResults([unknown.id]).first?.error?.code == "unknownType")
            // Dead-lettered unread: nested too deep for the worker, whose failure path still finds id, key and unique.
            var deep: JSONValue = 1
            for _ in 0..<100 { deep = [deep] }
            let tooDeep = unique("echo", deep)
            try producer.enqueue(tooDeep)
            #expect(try tap.waitForResults([tooDeep.id]).first?.error?.code == "invalidDescriptor")
            let last = unique("echo")
            try producer.enqueue(last)
            #expect(try tap.waitForResults([last.id]).first?.status == .succeeded)
            #expect(!Self.isHeld(key))
        }

        @Test("an expired lock is taken by the next job; the old job, ending, leaves the new holder's token")
        func expires() async throws {
            let queue = TestEnvironment.uniqueName("unique-expiry")
            let key = TestEnvironment.uniqueName("expiry")
            defer { [queue, UniqueLock.queue(forKey: key)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2", "--metrics-port", "0"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let slow = JobRequest(type: "sleep", input: ["seconds": 3], key: key, queue: queue, uniqueFor: .seconds(1))
            try producer.enqueue(slow)
            try worker.waitForStart(of: slow.id)
            let deadline = ContinuousClock.now + .seconds(20)
            let next = JobRequest(type: "sleep", input: ["seconds": 4], key: key, queue: queue, uniqueFor: .seconds(60))
            // Refused until the first lock expires, a second after it was taken.
            while (try? producer.enqueue(next)) == nil {
                #expect(ContinuousClock.now < deadline, "the expired lock was never taken")
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(try tap.waitForResults([slow.id]).first?.status == .succeeded)
            try worker.waitForStderr(containing: "this job's lock expired before it ended")
            #expect(try BrokerProbe.depth(of: UniqueLock.queue(forKey: key)) == 1, "the next job's token stays")
            #expect(throws: WarrenError.self) {
                try producer.enqueue(JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(5)))
            }
            #expect(try tap.waitForResults([next.id]).first?.status == .succeeded)
            #expect(!Self.isHeld(key))
            let metrics = try await MetricsScrape.fetch(try worker.metricsURL()) { metrics in
                metrics.value("warren_unique_lock_releases_total", ["outcome": "released"]) == 1
            }
            #expect(metrics.value("warren_unique_lock_releases_total", ["outcome": "takenByAnother"]) == 1)
            #expect(metrics.value("warren_unique_lock_releases_total", ["outcome": "released"]) == 1)
        }

        @Test(
            "a lock lasts no longer than a minute past its job's deadline; one that would expire before its job may start is refused"
        )
        func lockLifetimeAndDeadline() throws {
            let queue = TestEnvironment.uniqueName("unique-deadline")
            let key = TestEnvironment.uniqueName("deadline-key")
            defer { [queue, UniqueLock.queue(forKey: key)].forEach(BrokerProbe.delete) }
            let producer = try Producer.forTests()
            try producer.enqueue(
                JobRequest(
                    type: "echo", key: key, queue: queue, deadline: Date(timeIntervalSinceNow: 2),
                    uniqueFor: .seconds(600)))
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            let token = try #require(try connection.get(UniqueLock.queue(forKey: key), channel: 1))
            try connection.nack(token.deliveryTag, multiple: false, requeue: true, channel: 1)
            let expiration = try #require(token.properties.expiration.flatMap { Int($0) })
            #expect(expiration > 55_000 && expiration <= 62_000, "\(expiration) ms: the deadline's 2 s and a minute")
            let early = #expect(throws: WarrenError.self) {
                try producer.enqueue(
                    JobRequest(
                        type: "echo", key: key + "-late", queue: queue, notBefore: Date(timeIntervalSinceNow: 3600),
                        uniqueFor: .seconds(60)))
            }
            #expect(
                early?.code == .invalidConfiguration
                    && early?.message.contains("would expire before the job may start") == true)
        }

        @Test("warren unlock frees a held lock by hand and names its job; a free key says so; a bad key is refused")
        func unlock() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("unique-unlock")
            let key = TestEnvironment.uniqueName("stale")
            defer { [queue, UniqueLock.queue(forKey: key)].forEach(BrokerProbe.delete) }
            let producer = try Producer.forTests()
            // No worker: the job waits in its queue and holds the lock.
            let held = JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(600))
            try producer.enqueue(held)
            #expect(throws: WarrenError.self) {
                try producer.enqueue(JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(5)))
            }
            let freed = try CLI.run(["unlock", key, key + "-never", "--url", url])
            #expect(freed.status == 0, "\(freed.stderr)")
            #expect(freed.stdout == "\(key): freed (held by job \(held.id))\n\(key)-never: was free\n")
            #expect(!Self.isHeld(key))
            try producer.enqueue(JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(5)))
            #expect(try producer.unlock(key: key) != nil && producer.unlock(key: key) == nil)
            #expect(try BrokerProbe.depth(of: queue) == 2, "unlocking cancels nothing")
            let bad = try CLI.run(["unlock", "", "--url", url])
            #expect(
                bad.status == 64 && bad.stderr.contains("a unique job's key must be 1 to 241 bytes long"),
                "\(bad.stderr)")
        }

        @Test("one producer takes unique locks and asks workers for their status in turn, and unlocks after")
        func locksBesideStatusRequests() throws {
            let queue = TestEnvironment.uniqueName("unique-status")
            let key = TestEnvironment.uniqueName("beside-status")
            let locks = [UniqueLock.queue(forKey: key), UniqueLock.queue(forKey: key + "-2")]
            defer { ([queue] + locks).forEach(BrokerProbe.delete) }
            let producer = try Producer.forTests()
            defer { producer.close() }
            // The locks' channel stays open between calls; a status request opened the same channel number.
            try producer.enqueue(JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(60)))
            _ = try producer.workerStatuses(timeout: .milliseconds(100))
            _ = try producer.workerStatuses(timeout: .milliseconds(100))
            try producer.enqueue(JobRequest(type: "echo", key: key + "-2", queue: queue, uniqueFor: .seconds(60)))
            #expect(try producer.unlock(key: key) != nil && producer.unlock(key: key + "-2") != nil)
            #expect(try BrokerProbe.depth(of: queue) == 2)
            producer.close()
            let closed = #expect(throws: WarrenError.self) { try producer.unlock(key: key) }
            #expect(closed?.code == .invalidConfiguration && closed?.message == "the producer was closed")
        }

        @Test("producers racing for one key while workers end its jobs: never two of its jobs run at once")
        func racingProducers() throws {
            let queue = TestEnvironment.uniqueName("unique-race")
            let key = TestEnvironment.uniqueName("race")
            defer { [queue, UniqueLock.queue(forKey: key)].forEach(BrokerProbe.delete) }
            let tap = try MessageTap.results()
            let workers = try (1...3).map { _ in try CLI.startWorker(queue: queue, arguments: ["--width", "2"]) }
            defer { workers.forEach { $0.terminate() } }
            let enqueued = Mutex<[String]>([])
            let failures = Mutex<[String]>([])
            // Eight producers, each on a thread of its own (a producer is confined to its thread), 60 tries each.
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                do {
                    let producer = try Producer.forTests()
                    for _ in 0..<60 {
                        let job = JobRequest(
                            type: "sleep", input: ["seconds": 0.02], key: key, queue: queue, uniqueFor: .seconds(60))
                        do {
                            try producer.enqueue(job)
                            enqueued.withLock { $0.append(job.id) }
                        } catch let error as WarrenError where error.code == .duplicate {
                            Thread.sleep(forTimeInterval: 0.005)
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
            let ids = enqueued.withLock { $0 }
            #expect(ids.count >= 3, "some got the lock in turn")
            let runs = try tap.waitForResults(ids).map { result in
                (try #require(result.timings.startedAt), try #require(result.timings.finishedAt), result.jobID)
            }.sorted { $0.0 < $1.0 }
            for (run, next) in zip(runs, runs.dropFirst()) {
                #expect(next.0 >= run.1, "job \(next.2) started before job \(run.2) ended")
            }
            #expect(!Self.isHeld(key))
        }

        @Test("a unique job its queue refuses frees its lock; a lock queue declared otherwise is a broker error")
        func refusedJobsAndForeignLocks() throws {
            let url = try TestEnvironment.brokerURL
            let full = TestEnvironment.uniqueName("unique-full")
            let key = TestEnvironment.uniqueName("refused")
            let foreign = TestEnvironment.uniqueName("foreign-lock")
            defer {
                [full, UniqueLock.queue(forKey: key), UniqueLock.queue(forKey: foreign)].forEach(BrokerProbe.delete)
            }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            // A job queue at its length limit that refuses what comes: one message in, one at most.
            try connection.declareQueue(
                full, arguments: ["x-max-length": .int(1), "x-overflow": "reject-publish"], channel: 1)
            try connection.publish([1], exchange: "", routingKey: full, properties: MessageProperties(), channel: 1)
            let producer = try Producer.forTests()
            let job = JobRequest(type: "echo", key: key, queue: full, uniqueFor: .seconds(60))
            let refused = #expect(throws: WarrenError.self) { try producer.enqueue(job) }
            #expect(refused?.code == .broker)
            #expect(
                refused?.message.contains("refused job \(job.id) for queue '\(full)' (basic.nack") == true,
                "\(refused?.message ?? "")")
            #expect(!Self.isHeld(key), "the job was not enqueued: its lock is free")

            try connection.declareQueue(
                UniqueLock.queue(forKey: foreign), arguments: ["x-max-length": .int(1)], channel: 1)
            let cli = try CLI.run([
                "enqueue", "echo", "--key", foreign, "--unique-for", "1m", "--queue", full, "--url", url,
            ])
            #expect(cli.status == 1, "\(cli.stderr)")
            #expect(cli.stderr.contains("exists, but not as Warren declares a unique job's lock"), "\(cli.stderr)")
            #expect(!cli.stderr.contains("Usage"), "\(cli.stderr)")
            let own = try CLI.run(["enqueue", "echo", "--queue", UniqueLock.queue(forKey: key), "--url", url])
            #expect(own.status == 64 && own.stderr.contains("is one of Warren's own queues"), "\(own.stderr)")
            // Nor is a lock a reply queue: a result there would be a token that never expires.
            let reply = JobRequest(type: "echo", queue: full, replyTo: UniqueLock.queue(forKey: key))
            let refusedReply = #expect(throws: WarrenError.self) { try producer.enqueue(reply) }
            #expect(
                refusedReply?.code == .invalidConfiguration
                    && refusedReply?.message.contains("one of Warren's own queues") == true)
        }

        @Test(
            "pika takes a lock as the wire format says, and a Warren worker releases it; a unique job without a key is dead-lettered"
        )
        func foreignClients() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("unique-pika")
            let key = TestEnvironment.uniqueName("pika")
            defer { [queue, UniqueLock.queue(forKey: key)].forEach(BrokerProbe.delete) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let script = TestEnvironment.packageRoot.appendingPathComponent(
                "Tests/IntegrationTests/Clients/pika_unique.py")
            let client = try ChildProcess(URL(fileURLWithPath: "/usr/bin/python3"), [script.path, url, queue, key])
            #expect(client.waitForExit() == 0, "\(client.stderr)")
            let line = try #require(
                try JSONSerialization.jsonObject(with: Data(client.stdout.utf8)) as? [String: Any], "\(client.stdout)")
            #expect(line["first"] as? Bool == true && line["second"] as? Bool == false, "\(line)")
            #expect(line["status"] as? String == "succeeded" && line["third"] as? Bool == true, "\(line)")
            #expect(line["holder"] as? Bool == true, "\(line)")

            let dead = try MessageTap.deadLetters()
            let tap = try MessageTap.results()
            let id = TestEnvironment.uniqueName("keyless")
            let body = Array(#"{"version":1,"id":"\#(id)","type":"echo","unique":true}"#.utf8)
            try ForeignPublisher.publish(body, url: url, routingKey: queue)
            try dead.read(timeout: .seconds(30)) { letters in letters.contains { $0.body == body } }
            let letter = try #require(dead.messages.first { $0.body == body })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "invalidDescriptor")
            #expect(
                try tap.waitForResults([id]).first?.error?.message
                    == "unique: a unique job needs a key: its lock is the key's")
        }
    }
}
