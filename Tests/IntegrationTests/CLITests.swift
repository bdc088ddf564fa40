import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct CommandLine {
        @Test("enqueue --wait prints the result and exits 0, 3 or 4 by status; 5 on timeout")
        func exitCodes() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("cli")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let base = ["enqueue", "--url", url, "--queue", queue, "--wait"]

            let ok = try CLI.run(base + ["sum", "--input", #"{"numbers":[2,3]}"#])
            #expect(ok.status == 0, "\(ok.stderr)")
            #expect(ok.stdout.contains(#"output={"formattedSum":"5","sum":5}"#))

            let failed = try CLI.run(base + ["fail"])
            #expect(failed.status == 3)
            #expect(failed.stdout.contains("failed"))

            let directory = try TestEnvironment.temporaryDirectory()
            let input = directory.appendingPathComponent("input.json")
            try Data(#"{"numbers":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"delayMs":250}"#.utf8).write(to: input)
            let running = try ChildProcess(TestEnvironment.warrenBinary, base + ["sum", "--input", "@\(input.path)"])
            let deadline = ContinuousClock.now + .seconds(30)
            while running.stdout.isEmpty && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
            let id = running.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try worker.waitForStart(of: id)
            // Read from a file, as thousands of ids would be; an id given twice is sent once.
            let ids = directory.appendingPathComponent("ids.txt")
            try Data("# the running sum\n \(id) \n\(id)  # again\n".utf8).write(to: ids)
            let cancel = try CLI.run(["cancel", "--url", url, "--ids-from", ids.path])
            #expect(cancel.stdout.contains("cancellation sent for 1 job"), "\(cancel.stdout)\(cancel.stderr)")
            let bad = directory.appendingPathComponent("bad.txt")
            try Data("\(id)\n\nnot-an-id-\u{7}\n".utf8).write(to: bad)
            let refused = try CLI.run(["cancel", "--url", url, "--ids-from", bad.path])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("--ids-from \(bad.path), line 3: job id must be"), "\(refused.stderr)")
            // Two words on a line (two ids, or a graph's NAME ID): refused, not half taken.
            try Data("\(id) \(id)\n".utf8).write(to: bad)
            let paired = try CLI.run(["cancel", "--url", url, "--ids-from", bad.path])
            #expect(paired.status == 64)
            #expect(paired.stderr.contains("line 1: one job id per line"), "\(paired.stderr)")
            #expect(running.waitForExit() == 4)
            #expect(running.stdout.contains("cancelled \(id)"))

            let slow = try CLI.run(base + ["sleep", "--input", #"{"seconds":5}"#, "--timeout", "0.5"])
            #expect(slow.status == 5)
            #expect(slow.stderr.contains("no result for job"))
        }

        @Test(
            "enqueue --graph --wait prints results as they arrive; at the timeout it names the late jobs and exits 3 if one failed"
        )
        func graphWait() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("graph-wait")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "3"])
            defer { worker.terminate() }
            let graph = try TestEnvironment.temporaryDirectory().appendingPathComponent("graph.json")
            try Data(
                #"{"jobs":[{"name":"slow","type":"sleep","input":{"seconds":30}},{"name":"bad","type":"fail"},{"name":"quick","type":"echo","input":1}]}"#
                    .utf8
            ).write(to: graph)
            let output = try CLI.run([
                "enqueue", "--graph", graph.path, "--wait", "--timeout", "3", "--queue", queue, "--url", url,
            ])
            #expect(output.status == 3, "\(output.stdout)\(output.stderr)")
            #expect(output.stdout.contains("bad failed"), "\(output.stdout)")
            #expect(output.stdout.contains("quick succeeded"), "\(output.stdout)")
            #expect(!output.stdout.contains("slow succeeded"))
            #expect(output.stderr.contains("no result for job slow within 3 s"), "\(output.stderr)")
        }

        @Test("warren --version prints the library's version and exits 0")
        func version() throws {
            let printed = try CLI.run(["--version"])
            #expect(printed.status == 0, "\(printed.stderr)")
            #expect(printed.stdout == "\(WarrenVersion.string)\n")
        }

        @Test("bad arguments are rejected with a usage error (exit 64) before anything is published")
        func validation() throws {
            let url = try TestEnvironment.brokerURL
            // A graph whose one job's input nests 500 levels: with the descriptor, more than any worker takes.
            let deepGraph = try TestEnvironment.temporaryDirectory().appendingPathComponent("deep.json")
            let deep = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
            try Data(#"{"jobs":[{"name":"deep","type":"echo","input":\#(deep)}]}"#.utf8).write(to: deepGraph)
            for arguments in [
                ["enqueue", "--graph", deepGraph.path],
                ["enqueue", "--graph", deepGraph.path, "--require-success"],
                ["enqueue", "--graph", deepGraph.path, "--priority", "high"],
                ["schedule", deepGraph.path, "--count", "5"],
                ["enqueue", "echo", "--max-attempts", "-1"],
                ["enqueue", "echo", "--delay", "-5"],
                ["enqueue", "echo", "--queue", "line\nbreak"],
                ["enqueue", "--graph", deepGraph.path, "--input", "1"],
                ["enqueue", String(repeating: "t", count: 256)],
                ["enqueue", ""],
                ["enqueue", "sum", "--input", "{not json"],
                ["enqueue", "sum", "--input", "[1,2,]"],
                ["enqueue", "sum", "--supersede"],
                ["enqueue", "sum", "--priority", "urgent"],
                ["enqueue", "sum", "--input", "@/no/such/file.json"],
                ["enqueue", "sum", "--wait", "--reply-to", "mine"],
                ["enqueue", "sum", "--reply-to", ""],
                ["cancel"],
                ["cancel", "some-id", "--all"],
                ["cancel", "bad id"],
                ["cancel", "--all", "--key", "k", "--before", "5"],
                ["cancel", "--key", "", "--before", "5"],
                ["cancel", "--ids-from", "/no/such/ids.txt"],
                ["cancel", "--ids-from", "/dev/null"],
                ["enqueue", "echo", "--deadline", "0"],
                ["enqueue", "echo", "--deadline", "1e12"],
                ["enqueue", "echo", "--at", "10000-01-01T00:00:00Z"],
                ["worker", "--local-queue", "cpu"],
                ["worker", "--width", "0"],
                ["worker", "--queue", ""],
                ["worker", "--queue", "warren.dead"],
                ["worker", "--grace", "1e300"],
                ["enqueue", "echo", "--queue", ""],
                ["enqueue", "echo", "--queue", "warren.results"],
                ["pause", "--queue", ""],
                ["cancel", "--all", "--queue", ""],
                ["status", "--queue", "amq.gen-x"],
                ["worker", "--metrics-host", "::1", "--metrics-port", "0"],
                ["enqueue", "--graph", "/no/such/graph.json"],
                ["worker", "--max-message-bytes", "0"],
                ["worker", "--local-queue", "io=2", "--local-queue", "io=3"],
                ["worker", "--width", "10001"],
                ["worker", "--queue", "twice", "--queue", "twice"],
                ["worker", "--worker-id", ""],
                ["enqueue", "echo", "--timeout", "5"],
                ["enqueue", "echo", "--reply-to", TestEnvironment.uniqueName("no-such-reply-queue")],
                ["results", "--job", "bad id!"],
                ["dead", "list", "--limit=-1"],
                ["cancel", "--key", "k", "--before", "99999999999999999"],
                [
                    "enqueue", "echo", "--input",
                    String(repeating: "[", count: 500) + String(repeating: "]", count: 500),
                ],
                ["worker", "--max-nesting-depth", "501"],
                ["purge", "warren.dead", "--yes"],
                ["dead", "delete", "some-id", "--all", "--yes"],
            ] {
                let output = try CLI.run(arguments + ["--url", url])
                #expect(output.status == 64, "\(arguments): \(output.stderr)")
                #expect(!output.stderr.isEmpty)
                // The usage shown is the command's, also for what its run() refuses (a file, the producer).
                #expect(output.stderr.contains("Usage: warren \(arguments[0])"), "\(arguments): \(output.stderr)")
            }
            // No command at all is no success either: a script that lost its arguments learns of it.
            for (arguments, problem) in [
                ([], "name a command"), (["dead"], "name a subcommand: list, requeue or delete"),
            ] {
                let output = try CLI.run(arguments)
                #expect(output.status == 64, "\(arguments): \(output.stderr)")
                #expect(output.stdout.isEmpty && output.stderr.contains(problem), "\(arguments): \(output.stderr)")
            }
        }

        @Test("pause and resume --worker ID exit 1, naming the live workers, when no live worker is ID")
        func pauseOfAnUnknownWorker() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("pause-unknown")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, id: "pause-known")
            defer { worker.terminate() }
            for command in ["pause", "resume"] {
                let typo = try CLI.run([command, "--worker", "pause-knwon", "--queue", queue, "--url", url])
                #expect(typo.status == 1, "\(typo.stderr)")
                #expect(typo.stderr.contains("no live worker reported as pause-knwon"), "\(typo.stderr)")
                #expect(typo.stderr.contains("pause-known"), "\(typo.stderr)")
                let known = try CLI.run([command, "--worker", "pause-known", "--queue", queue, "--url", url])
                #expect(known.status == 0, "\(known.stderr)")
                // A queue the worker does not consume, or that the broker does not have, is not obeyed either.
                let elsewhere = try CLI.run([
                    command, "--worker", "pause-known", "--queue", "warren.default", "--url", url,
                ])
                #expect(elsewhere.status == 1, "\(elsewhere.stderr)")
                #expect(
                    elsewhere.stderr.contains(
                        "warren: worker pause-known does not consume queue warren.default (it consumes: \(queue))"),
                    "\(elsewhere.stderr)")
                let missing = try CLI.run([command, "--queue", "\(queue)-typo", "--url", url])
                #expect(missing.status == 1, "\(missing.stderr)")
                #expect(
                    missing.stderr == "warren: the broker has no queue \(queue)-typo, so no worker consumes it\n",
                    "\(missing.stderr)")
                #expect(missing.stdout.isEmpty, "nothing was sent: \(missing.stdout)")
            }
        }

        @Test("the sequence numbers of one host strictly increase across producer processes")
        func sequenceAcrossProcesses() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("sequence")
            defer { BrokerProbe.delete(queue) }
            let state = try TestEnvironment.temporaryDirectory().path
            let producers = try (0..<4).map { _ in
                try ChildProcess(
                    TestEnvironment.warrenBinary,
                    ["enqueue", "echo", "--json", "--url", url, "--queue", queue, "--key", "k"],
                    environment: ["WARREN_STATE_DIR": state])
            }
            var sequences: [UInt64] = []
            for producer in producers {
                #expect(producer.waitForExit() == 0, "\(producer.stderr)")
                let object = try JSONSerialization.jsonObject(with: Data(producer.stdout.utf8)) as? [String: Any]
                sequences.append(try #require((object?["sequence"] as? NSNumber)?.uint64Value))
            }
            #expect(Set(sequences).count == 4, "no two processes got the same number")
            let later = try CLI.run(
                ["enqueue", "echo", "--json", "--url", url, "--queue", queue], environment: ["WARREN_STATE_DIR": state])
            let object = try JSONSerialization.jsonObject(with: Data(later.stdout.utf8)) as? [String: Any]
            #expect(try #require((object?["sequence"] as? NSNumber)?.uint64Value) > sequences.max()!)

            // What --json printed is what went out, to the millisecond of createdAt.
            var printed: [String: String] = [:]
            for output in producers.map(\.stdout) + [later.stdout] {
                let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
                printed[try #require(object?["id"] as? String)] = object?["createdAt"] as? String
            }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            var sent: [String: String] = [:]
            while let delivery = try connection.get(queue, channel: 1) {
                let object = try JSONSerialization.jsonObject(with: Data(delivery.body)) as? [String: Any]
                sent[try #require(object?["id"] as? String)] = object?["createdAt"] as? String
            }
            #expect(sent == printed)
        }

        @Test("concurrent graph enqueues get consecutive sequence numbers that never overlap across processes")
        func sequenceRangesAcrossProcesses() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("sequence-ranges")
            defer { BrokerProbe.delete(queue) }
            let state = try TestEnvironment.temporaryDirectory()
            let graph = state.appendingPathComponent("graph.json")
            let jobs = (0..<5).map { #"{"name": "j\#($0)", "type": "echo"}"# }
            try Data(#"{"jobs": [\#(jobs.joined(separator: ", "))]}"#.utf8).write(to: graph)
            let producers = try (0..<4).map { _ in
                try ChildProcess(
                    TestEnvironment.warrenBinary,
                    ["enqueue", "--graph", graph.path, "--json", "--url", url, "--queue", queue],
                    environment: ["WARREN_STATE_DIR": state.path])
            }
            var ranges: [ClosedRange<UInt64>] = []
            for producer in producers {
                #expect(producer.waitForExit() == 0, "\(producer.stderr)")
                // One line per job: its name, then its descriptor.
                let numbers = try producer.stdout.split(separator: "\n").map { line in
                    let json = try #require(line.split(separator: " ", maxSplits: 1).last)
                    let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
                    return try #require((object?["sequence"] as? NSNumber)?.uint64Value)
                }.sorted()
                #expect(numbers.count == 5)
                let range = try #require(numbers.first)...(try #require(numbers.last))
                #expect(range.count == 5, "one process's jobs have consecutive numbers: \(numbers)")
                ranges.append(range)
            }
            ranges.sort { $0.lowerBound < $1.lowerBound }
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "\(ranges)")
        }

        @Test("a job the broker refuses for a moment (a quorum queue electing a leader) is sent again, and enqueued")
        func refusedForAMoment() throws {
            let queue = TestEnvironment.uniqueName("refused-moment")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            // Full for now: the broker refuses (basic.nack) a publish until the message in it is taken.
            try connection.declareQueue(
                queue, arguments: ["x-max-length": .int(1), "x-overflow": "reject-publish"], channel: 1)
            try connection.publish(Array("filler".utf8), exchange: "", routingKey: queue, channel: 1)
            let filled = ContinuousClock.now + .seconds(30)
            while try connection.declareQueue(queue, passive: true, channel: 1).messageCount == 0,
                ContinuousClock.now < filled
            {
                Thread.sleep(forTimeInterval: 0.02)
            }
            let taker = Thread {
                Thread.sleep(forTimeInterval: 0.3)
                guard let other = try? AMQPConnection(configuration: AMQPConfiguration(url: url)) else { return }
                defer { other.close() }
                try? other.openChannel(1)
                _ = try? other.get(queue, noAck: true, channel: 1)
            }
            taker.start()
            let job = try Producer.forTests().enqueue(JobRequest(type: "echo", queue: queue))
            let left = try #require(try connection.get(queue, noAck: true, channel: 1))
            #expect(left.properties.messageID == job.id, "the filler was taken, and the job is in the queue")
        }

        @Test(
            "a job a full classic queue refuses is sent once: with reject-publish-dlx, one copy is dead-lettered, not one per send"
        )
        func refusedByAFullClassicQueue() throws {
            let queue = TestEnvironment.uniqueName("refused-full")
            let policy = TestEnvironment.uniqueName("full-policy")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            try producer.enqueue(JobRequest(type: "echo", queue: queue))  // the queue, made as Warren makes it
            try Chaos.brokerCtl([
                "set_policy", policy, "^\(queue)$", #"{"max-length":1,"overflow":"reject-publish-dlx"}"#,
                "--apply-to", "queues",
            ])
            defer { try? Chaos.brokerCtl(["clear_policy", policy]) }
            let applied = ContinuousClock.now + .seconds(60)
            while try !Self.queuePolicies().contains("\(queue)\t\(policy)"), ContinuousClock.now < applied {
                Thread.sleep(forTimeInterval: 0.2)
            }
            let dead = try MessageTap.deadLetters()
            let refused = JobRequest(type: "echo", queue: queue)
            let error = #expect(throws: WarrenError.self) { try producer.enqueue(refused) }
            #expect(
                error?.message.contains("(basic.nack, sent once: the queue is at its length limit") == true,
                "\(String(describing: error))")
            try dead.settle(for: .seconds(2))
            #expect(dead.messages.filter { $0.properties.messageID == refused.id }.count == 1)
        }

        /// `QUEUE<tab>POLICY` lines of the test broker's queues.
        static func queuePolicies() throws -> String {
            let directory = try #require(TestEnvironment.brokerDirectory, "WARREN_BROKER_DIR is set by scripts/test")
            let ctl = try ChildProcess(
                TestEnvironment.packageRoot.appendingPathComponent("scripts/broker"),
                ["ctl", directory, "list_queues", "name", "policy", "--no-table-headers", "--quiet"])
            #expect(ctl.waitForExit(timeout: .seconds(120)) == 0, "\(ctl.stderr)")
            return ctl.stdout
        }

        @Test(
            "the enqueued dependents of a job the broker refuses are cancelled, and supersede nothing: they could never start"
        )
        func strandedDependents() throws {
            let full = TestEnvironment.uniqueName("stranded-full")
            let queue = TestEnvironment.uniqueName("stranded")
            defer { [full, queue].forEach(BrokerProbe.delete) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            try connection.declareQueue(
                full, arguments: ["x-max-length": .int(0), "x-overflow": "reject-publish"], channel: 1)
            let tap = try MessageTap.results()
            let producer = try Producer.forTests()
            let key = TestEnvironment.uniqueName("stranded-key")
            let older = try producer.enqueue(JobRequest(type: "echo", key: key, queue: queue))
            let refused = JobRequest(type: "echo", queue: full)
            let dependent = JobRequest(
                type: "echo", key: key, supersede: true, queue: queue, dependencies: [refused.id])
            let further = JobRequest(type: "echo", queue: queue, dependencies: [dependent.id])
            let error = #expect(throws: WarrenError.self) { try producer.enqueue([refused, dependent, further]) }
            #expect(error?.enqueuedJobIDs == [dependent.id, further.id])
            #expect(
                error?.message.contains(
                    "the 2 enqueued job(s) depending on them (jobs \(dependent.id), \(further.id)) could never start, and "
                        + "were cancelled") == true, "\(String(describing: error))")
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let results = try tap.waitForResults([older.id, dependent.id, further.id])
            #expect(results.map(\.status) == [.succeeded, .cancelled, .cancelled], "\(results)")
        }

        @Test("a job for a queue deleted since the producer declared it is refused, not confirmed and lost")
        func deletedQueue() throws {
            let queue = TestEnvironment.uniqueName("deleted")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            try producer.enqueue(JobRequest(type: "echo", queue: queue))
            BrokerProbe.delete(queue)
            let error = #expect(throws: WarrenError.self) {
                try producer.enqueue([JobRequest(type: "echo", queue: queue), JobRequest(type: "echo", queue: queue)])
            }
            #expect(error?.code == .queueUnreachable)
            #expect(
                error?.message.contains("took 2 jobs for queue '\(queue)' nowhere") == true,
                "\(String(describing: error))")
            try producer.enqueue(JobRequest(type: "echo", queue: queue))
            #expect(try BrokerProbe.depth(of: queue) == 1, "declared again, and the job is in it")
        }
    }
}
