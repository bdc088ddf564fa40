import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Control {
        @Test("pause: executing jobs go on, waiting ones go back to the broker and nothing new starts; resume picks up")
        func pauseAndResume() throws {
            let queue = TestEnvironment.uniqueName("pause")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let id = TestEnvironment.uniqueName("pausable")
            let worker = try CLI.startWorker(queue: queue, id: id, arguments: ["--width", "1", "--prefetch", "3"])
            defer { worker.terminate() }
            let running = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 1], queue: queue))
            try worker.waitForStart(of: running.id)
            let waiting = try producer.enqueue(JobRequest(type: "echo", input: "waiting", queue: queue))
            try producer.pause(worker: id)
            #expect(try tap.waitForResult(running.id).status == .succeeded, "the executing job went on")
            let later = try producer.enqueue(JobRequest(type: "echo", input: "later", queue: queue))
            try tap.settle(for: .seconds(1))
            #expect(tap.results(for: waiting.id).isEmpty && tap.results(for: later.id).isEmpty, "nothing started")
            let status = try #require(try producer.workerStatuses().first { $0.workerID == id })
            #expect(status.pausedQueues == [queue])
            #expect(try BrokerProbe.depth(of: queue) == 2, "both jobs wait in the broker")

            try producer.resume(worker: id)
            let results = try tap.waitForResults([waiting.id, later.id])
            #expect(results.map(\.status) == [.succeeded, .succeeded])
        }

        @Test("a worker started after a pause starts paused")
        func lateJoinerStartsPaused() throws {
            let queue = TestEnvironment.uniqueName("paused-late")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            try producer.pause(queue: queue)
            defer { try? producer.resume(queue: queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try producer.enqueue(JobRequest(type: "echo", input: "held", queue: queue))
            try tap.settle(for: .seconds(1))
            #expect(tap.results(for: job.id).isEmpty)
            try producer.resume(queue: queue)
            #expect(try tap.waitForResult(job.id).status == .succeeded)
        }

        @Test(
            "cancel --all: jobs in the broker, waiting in a worker and executing all end cancelled, each with a result")
        func cancelAll() throws {
            let queue = TestEnvironment.uniqueName("cancel-all")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "2"])
            defer { worker.terminate() }
            let executing = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 30], queue: queue))
            try worker.waitForStart(of: executing.id)
            let jobs = try producer.enqueue(
                (1...4).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) })
            let output = try CLI.run(["cancel", "--all", "--queue", queue, "--url", try TestEnvironment.brokerURL])
            #expect(output.status == 0, "\(output.stderr)")
            let results = try tap.waitForResults([executing.id] + jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .cancelled })
            let after = try producer.enqueue(JobRequest(type: "echo", input: "after", queue: queue))
            #expect(try tap.waitForResult(after.id).status == .succeeded, "jobs enqueued after cancel --all run")
            try tap.settle()
            #expect(tap.arrivedResults.filter { r in jobs.contains { $0.id == r.jobID } }.count == 4)
        }

        @Test("warren status lists every live worker with its local queues, counts and totals")
        func status() throws {
            let queue = TestEnvironment.uniqueName("status")
            defer { BrokerProbe.delete(queue) }
            let first = try CLI.startWorker(
                queue: queue, id: "status-a", arguments: ["--width", "2", "--local-queue", "io=8"])
            defer { first.terminate() }
            let second = try CLI.startWorker(queue: queue, id: "status-b")
            defer { second.terminate() }
            let producer = try Producer.forTests()
            let job = try producer.enqueue(JobRequest(type: "echo", input: "count me", queue: queue), watch: true)
            _ = try producer.waitForResult(of: job.id, timeout: .seconds(30))

            let output = try CLI.run(["status", "--url", try TestEnvironment.brokerURL])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout.contains("status-a host="))
            #expect(output.stdout.contains("status-b host="))
            #expect(output.stdout.contains("local default width=2 executing=0 waiting=0"))
            #expect(output.stdout.contains("local io width=8"))
            let statuses = try producer.workerStatuses()
            let total = statuses.filter { $0.workerID.hasPrefix("status-") }.map { $0.totals["succeeded"] ?? 0 }.reduce(
                0, +)
            #expect(total == 1)
        }

        @Test(
            "warren status --jobs lists each job a worker holds: executing with its progress, and what the others wait for"
        )
        func jobListing() throws {
            let queue = TestEnvironment.uniqueName("status-jobs")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let worker = try CLI.startWorker(
                queue: queue, id: "\(queue)-w",
                arguments: ["--width", "1", "--prefetch", "4", "--rate-limit", "echo=1/h", "--time-limit", "sum=1h"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            // The sum holds the only thread (a minute, reporting progress); the first echo waits for the thread,
            // the second for its turn under the rate limit, and the last job for the sum to end.
            let busy = JobRequest(type: "sum", input: .numbers(Array(1...300), delayMs: 200), queue: queue)
            try producer.enqueue(busy)
            try worker.waitForStart(of: busy.id)
            let first = JobRequest(type: "echo", input: "first", priority: .high, queue: queue)
            let second = JobRequest(type: "echo", input: "second", queue: queue)
            let after = JobRequest(type: "echo", input: "after", queue: queue, dependencies: [busy.id])
            try producer.enqueue([first, second, after])

            var status: WorkerStatus?
            let deadline = ContinuousClock.now + .seconds(30)
            // Until the sum reported progress past its first report, which says 0, before it adds its first number.
            repeat {
                Thread.sleep(forTimeInterval: 0.2)
                status = try producer.workerStatuses(timeout: .seconds(1), jobs: 10).first {
                    $0.workerID == "\(queue)-w"
                }
            } while (status?.jobs?.count != 4 || (status?.jobs?.first?.progress ?? 0) == 0)
                && ContinuousClock.now < deadline
            let jobs = try #require(status?.jobs)
            #expect(
                jobs.map(\.id) == [busy.id, first.id, second.id, after.id],
                "executing first, then by priority and arrival")
            #expect(jobs.map(\.state) == [.executing, .waiting, .waitingForTurn, .waitingForDependencies])
            #expect(jobs.map(\.waitingOn) == [nil, nil, nil, [busy.id]], "what a parked job waits for")
            #expect(jobs[0].executingSeconds != nil && jobs[1].executingSeconds == nil)
            #expect(jobs[0].timeLimitSeconds == 3600 && jobs[1].timeLimitSeconds == nil)
            #expect((jobs[0].progress ?? 0) > 0 && jobs[0].progressMessage?.hasPrefix("adding") == true)
            #expect(jobs[1].priority == .high && jobs.allSatisfy { $0.queue == queue && $0.attempt == 1 })
            #expect(status?.moreJobs == 0)

            let text = try CLI.run(["status", "--jobs-limit", "2", "--url", url])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("  job \(busy.id) type=sum executing for "), "\(text.stdout)")
            #expect(text.stdout.contains("time-limit=1h"))
            #expect(text.stdout.contains("  job \(first.id) type=echo waiting for "))
            #expect(!text.stdout.contains(second.id))
            #expect(text.stdout.contains("  … and 2 more jobs"))
            let json = try CLI.run(["status", "--jobs", "--json", "--url", url])
            #expect(json.stdout.contains("\"state\":\"waitingForTurn\""), "\(json.stdout)")
            let plain = try CLI.run(["status", "--url", url])
            #expect(!plain.stdout.contains(busy.id), "without --jobs, no jobs")

            try producer.cancel(jobIDs: [busy.id, first.id, second.id, after.id])
            _ = try tap.waitForResults([busy.id, first.id, second.id, after.id])
        }

        @Test(
            "a status reply lists jobs up to a budget of bytes, so that long keys cannot make it larger than the broker takes"
        )
        func jobListingBudget() throws {
            let queue = TestEnvironment.uniqueName("status-budget")
            defer { BrokerProbe.delete(queue) }
            let id = "\(queue)-w"
            let worker = try CLI.startWorker(queue: queue, id: id, arguments: ["--width", "1", "--prefetch", "8"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let busy = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 60], queue: queue))
            try worker.waitForStart(of: busy.id)
            // Six jobs with keys of 900 KB each wait: 5.4 MB of keys, more than the 4 MiB a reply lists.
            let waiting = (1...6).map { n in
                JobRequest(type: "echo", input: .null, key: String(repeating: "\(n)", count: 900_000), queue: queue)
            }
            try producer.enqueue(waiting)
            var status: WorkerStatus?
            let deadline = ContinuousClock.now + .seconds(30)
            repeat {
                Thread.sleep(forTimeInterval: 0.2)
                status = try producer.workerStatuses(timeout: .seconds(2), jobs: 100).first { $0.workerID == id }
            } while (status?.jobs?.count ?? 0) + (status?.moreJobs ?? 0) < 7 && ContinuousClock.now < deadline
            #expect(status?.jobs?.count == 5, "the sleep and four of the six")
            #expect(status?.moreJobs == 2)
            #expect(!worker.stderr.contains("lost the broker"))
            try producer.cancel(jobIDs: [busy.id] + waiting.map(\.id))
            _ = try tap.waitForResults([busy.id] + waiting.map(\.id))
        }

        @Test(
            "warren resize widens a local queue live: waiting jobs start and the prefetch follows; a late worker keeps its width"
        )
        func resize() throws {
            let queue = TestEnvironment.uniqueName("resize")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let id = "\(queue)-w"
            let worker = try CLI.startWorker(
                queue: queue, id: id, arguments: ["--width", "1", "--local-queue", "io=2"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let jobs = (1...4).map { _ in JobRequest(type: "sleep", input: ["seconds": 60], queue: queue) }
            try producer.enqueue(jobs)
            try worker.waitForStart(of: jobs[0].id)

            let output = try CLI.run(["resize", "default=3", "--url", url, "--timeout", "1"])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout.contains("\(id) local default width=3"), "\(output.stdout)")
            try jobs.prefix(3).forEach { try worker.waitForStart(of: $0.id) }
            let status = try #require(try producer.workerStatuses().first { $0.workerID == id })
            let widened = status.localQueues.first { $0.name == "default" }
            #expect(widened?.width == 3 && widened?.executing == 3 && widened?.waiting == 1, "\(status.localQueues)")
            #expect(status.prefetch == 5, "the prefetch follows the widths: 3 + 2")
            #expect(!worker.logsStart(of: jobs[3].id), "the fourth, now held by the worker, waits for a thread")

            // Narrower: the executing jobs go on.
            try producer.resize(localQueue: "default", width: 1, worker: id)
            try producer.cancel(jobIDs: [jobs[0].id, jobs[1].id])
            _ = try tap.waitForResults([jobs[0].id, jobs[1].id])
            let narrowed = try #require(try producer.workerStatuses().first { $0.workerID == id })
            #expect(narrowed.localQueues.first { $0.name == "default" }?.width == 1)
            #expect(narrowed.localQueues.first { $0.name == "default" }?.executing == 1, "\(narrowed.localQueues)")
            #expect(narrowed.prefetch == 3)

            // A worker started after the resize keeps its own width, even after one from a clock far ahead; a local
            // queue nobody has is reported.
            let ahead =
                #"{"version":1,"kind":"resize","localQueue":"default","width":9,"sentAt":"2099-01-01T00:00:00Z"}"#
            try ForeignPublisher.publish(
                Array(ahead.utf8), url: url, exchange: Topology.controlExchange, routingKey: "")
            let late = try CLI.startWorker(queue: queue, id: "\(queue)-late", arguments: ["--width", "1"])
            defer { late.terminate() }
            let lateStatus = try producer.workerStatuses().first { $0.workerID == "\(queue)-late" }
            #expect(lateStatus?.localQueues.first?.width == 1)
            let unknown = try CLI.run(["resize", "gpu=2", "--url", url, "--timeout", "0.5"])
            #expect(unknown.status == 1)
            #expect(
                unknown.stderr.contains("warren: no live worker has local queue gpu (their local queues: "),
                "\(unknown.stderr)")
            let notThere = try CLI.run(["resize", "gpu=2", "--url", url, "--worker", id, "--timeout", "0.5"])
            #expect(notThere.status == 1)
            #expect(
                notThere.stderr.contains(
                    "warren: worker \(id) has no local queue gpu (its local queues: default, io)\n"),
                "\(notThere.stderr)")
            let absent = try CLI.run(["resize", "default=2", "--url", url, "--worker", "nobody", "--timeout", "0.5"])
            #expect(absent.status == 1)
            #expect(absent.stderr.contains("warren: worker nobody did not answer within 0.5 s\n"), "\(absent.stderr)")
            try producer.cancel(jobIDs: jobs.map(\.id))
            _ = try tap.waitForResults(jobs.map(\.id))
        }

        @Test("workers sharing an id by mistake each answer status, with a warning; a zero --timeout is no alarm")
        func sharedWorkerIDs() throws {
            let queue = TestEnvironment.uniqueName("shared-id")
            defer { BrokerProbe.delete(queue) }
            let id = TestEnvironment.uniqueName("twin")
            let first = try CLI.startWorker(queue: queue, id: id)
            defer { first.terminate() }
            let second = try CLI.startWorker(queue: queue, id: id)
            defer { second.terminate() }
            let url = try TestEnvironment.brokerURL
            let text = try CLI.run(["status", "--url", url, "--queue", queue])
            #expect(text.status == 0, "\(text.stderr)")
            let blocks = text.stdout.split(separator: "\n").filter { $0.hasPrefix("\(id) host=") }
            #expect(blocks.count == 2, "two blocks: \(text.stdout)")
            #expect(text.stderr.contains("warren: 2 live workers answer as \(id) ("), "\(text.stderr)")
            let json = try CLI.run(["status", "--url", url, "--queue", queue, "--json"])
            #expect(json.stdout.components(separatedBy: "\"workerId\":\"\(id)\"").count == 3, "\(json.stdout)")

            // A timeout too short for any answer, or for the broker's confirm, is not a broker blocking publishers.
            let hasty = try CLI.run(["status", "--url", url, "--timeout", "0"])
            #expect(hasty.status == 0, "\(hasty.stderr)")
            #expect(!hasty.stdout.contains("workers unknown"), "\(hasty.stdout)")
            let resized = try CLI.run(["resize", "default=1", "--url", url, "--worker", id, "--timeout", "0"])
            #expect(!resized.stderr.contains("memory or disk alarm"), "\(resized.stderr)")
        }

        @Test("a worker in the grace period of a stop says so in its status")
        func stoppingStatus() throws {
            let queue = TestEnvironment.uniqueName("stopping-status")
            defer { BrokerProbe.delete(queue) }
            let id = TestEnvironment.uniqueName("stopping-worker")
            let worker = try CLI.startWorker(queue: queue, id: id, arguments: ["--grace", "60"])
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let job = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 60], queue: queue))
            try worker.waitForStart(of: job.id)
            #expect(try producer.workerStatuses().first { $0.workerID == id }?.stopping == nil)
            worker.signal(SIGTERM)
            try worker.waitForStderr(containing: "stopping: no new jobs")
            let text = try CLI.run(["status", "--url", try TestEnvironment.brokerURL])
            #expect(text.stdout.contains("\(id) ") && text.stdout.contains(" stopping\n"), "\(text.stdout)")
            #expect(try producer.workerStatuses().first { $0.workerID == id }?.stopping == true)
            try producer.cancel(jobIDs: [job.id])
            #expect(worker.waitForExit() == 0)
        }

        @Test("warren status shows each job queue's waiting, delayed and consumers, and the dead letters")
        func queueStatus() throws {
            let queue = TestEnvironment.uniqueName("depth")
            let delayQueue = Topology.delayQueue(for: queue, seconds: 512)
            defer { [queue, delayQueue].forEach(BrokerProbe.delete) }
            let url = try TestEnvironment.brokerURL
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let jobs = try producer.enqueue(
                (1...3).map { JobRequest(type: "echo", input: .number(Double($0)), queue: queue) })
            // A retry waiting out its backoff, as a worker leaves it.
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            #expect(try Topology.declareDelayQueue(for: queue, seconds: 512, on: connection) == true)
            // Confirmed before the counts are read: an unconfirmed publish may not be in the queue yet.
            try connection.enableConfirms(channel: 1)
            try connection.publish(
                Array("{}".utf8), exchange: "", routingKey: delayQueue, properties: MessageProperties(persistent: true),
                channel: 1)
            try Self.waitForConfirm(on: connection, channel: 1)

            #expect(
                try producer.jobQueueStatus(queue) == JobQueueStatus(queue: queue, waiting: 3, delayed: 1, consumers: 0)
            )
            #expect(try producer.jobQueueStatus(TestEnvironment.uniqueName("missing")) == nil)
            let named = try CLI.run(["status", "--queue", queue, "--timeout", "0.2", "--url", url])
            #expect(named.status == 0, "\(named.stderr)")
            #expect(named.stdout.contains("queue \(queue) waiting=3 delayed=1 consumers=0"), "\(named.stdout)")
            // warren.default shows, consumed or not, once it exists; a queue asked for that does not exist says so.
            _ = try Topology.declareJobQueue(
                Topology.defaultQueue, priorities: false, quorum: false, on: connection, channel: 1)
            let missing = TestEnvironment.uniqueName("missing")
            let withDefault = try CLI.run(["status", "--queue", queue, "--queue", missing, "--json", "--url", url])
            #expect(withDefault.stdout.contains(#""queue":"warren.default""#), "\(withDefault.stdout)")
            #expect(withDefault.stdout.contains(#"{"exists":false,"queue":"\#(missing)"}"#), "\(withDefault.stdout)")

            let deadBefore = try #require(try producer.deadLetterCount())
            let worker = try CLI.startWorker(queue: queue, id: "\(queue)-worker")
            defer { worker.terminate() }
            _ = try tap.waitForResults(jobs.map(\.id))
            try ForeignPublisher.publish(Array("{\"version\":1,".utf8), url: url, routingKey: queue)
            let deadline = ContinuousClock.now + .seconds(30)
            while try producer.deadLetterCount() == deadBefore, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(try producer.deadLetterCount() == deadBefore + 1)

            // Without --queue: the queues the live workers take jobs from.
            let all = try CLI.run(["status", "--url", url])
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdout.contains("queue \(queue) waiting=0 delayed=1 consumers=1"), "\(all.stdout)")
            #expect(all.stdout.contains("dead letters=\(deadBefore + 1) (warren dead list)"))
            let json = try CLI.run(["status", "--queue", queue, "--json", "--url", url])
            #expect(json.stdout.contains("{\"consumers\":1,\"delayed\":1,\"queue\":\"\(queue)\",\"waiting\":0}"))
            #expect(json.stdout.contains("{\"deadLetters\":\(deadBefore + 1)}"))
        }

        @Test("warren status where no dead-letter queue exists says so, rather than count none")
        func statusWithoutDeadLetterQueue() throws {
            let (vhost, url) = try Chaos.addVirtualHost("no-dead")
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            let text = try CLI.run(["status", "--timeout", "0.2", "--url", url])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(
                text.stdout.contains("dead letters: no queue warren.dead: no worker has connected here yet"),
                "\(text.stdout)")
            #expect(!text.stdout.contains("dead letters="), "\(text.stdout)")
            let json = try CLI.run(["status", "--timeout", "0.2", "--json", "--url", url])
            #expect(json.stdout.contains(#"{"deadLettersMissing":"no queue warren.dead: "#), "\(json.stdout)")
        }

        @Test("a job past its deadline is not started; an executing one is cancelled when it passes")
        func deadlines() throws {
            let queue = TestEnvironment.uniqueName("deadline")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let expired = try producer.enqueue(
                JobRequest(type: "echo", input: "late", queue: queue, deadline: Date(timeIntervalSinceNow: -1)))
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let running = try producer.enqueue(
                JobRequest(
                    type: "sum", input: .numbers(Array(1...600), delayMs: 50), queue: queue,
                    deadline: Date(timeIntervalSinceNow: 2)))
            let results = try tap.waitForResults([expired.id, running.id])
            #expect(results.map(\.status) == [.cancelled, .cancelled])
            #expect(results.map { $0.cancellation?.reason } == ["deadline", "deadline"])
            #expect(results[0].timings.startedAt == nil)
            #expect(results[1].timings.startedAt != nil)
            #expect(
                results.map { $0.cancellation?.message } == [
                    "deadline passed before the job started", "the job's deadline passed",
                ])
        }

        /// Waits for the broker's confirm of the one publish on `channel`, which has confirms on.
        static func waitForConfirm(on connection: AMQPConnection, channel: UInt16) throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                while let event = try connection.nextEvent() {
                    if case .confirm(channel, _, _, let ack) = event {
                        try #require(ack, "the broker refused the publish")
                        return
                    }
                }
                connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
            }
            Issue.record("no confirm within 30 s")
        }
    }
}
