import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct StaleResults {
        @Test("warren results keeps the newest result per key and reports an older arrival as stale, also with --job")
        func staleDiscard() throws {
            let queue = TestEnvironment.uniqueName("stale")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let key = TestEnvironment.uniqueName("totals")
            // The older calculation is slow, the newer fast: the older result arrives last, as in ListAdder.
            let older = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers([1, 2, 3, 4, 5], delayMs: 200), key: key, queue: queue))
            try worker.waitForStart(of: older.id)
            let newer = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers([10, 20]), key: key, queue: queue))
            _ = try tap.waitForResults([older.id, newer.id])

            let output = try CLI.run(["results", "--key", key, "--url", try TestEnvironment.brokerURL])
            #expect(output.status == 0, "\(output.stderr)")
            let lines = output.stdout.split(separator: "\n")
            let newerLine = try #require(lines.first { $0.contains(newer.id) })
            let olderLine = try #require(lines.first { $0.contains(older.id) })
            #expect(newerLine.hasPrefix("succeeded \(newer.id)"))
            #expect(olderLine.hasPrefix("stale \(older.id)"))
            #expect(olderLine.contains("newer seq=\(newer.sequence)"))
            // Picked by --job, the older result is still judged against the newer one it did not ask for.
            let picked = try CLI.run(["results", "--job", older.id, "--url", try TestEnvironment.brokerURL])
            #expect(picked.stdout.hasPrefix("stale \(older.id)"), "\(picked.stdout)")
            #expect(!picked.stdout.contains(newer.id))
        }

        @Test("warren results --follow prints results as they arrive, as JSON lines with --json")
        func follow() throws {
            let queue = TestEnvironment.uniqueName("follow")
            defer { BrokerProbe.delete(queue) }
            let follower = try ChildProcess(
                TestEnvironment.warrenBinary,
                ["results", "--follow", "--json", "--idle", "5", "--url", try TestEnvironment.brokerURL])
            defer { follower.terminate() }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let job = try producer.enqueue(JobRequest(type: "echo", input: "hello", key: "greeting", queue: queue))
            #expect(follower.waitForExit(timeout: .seconds(60)) == 0)
            let line = try #require(follower.stdout.split(separator: "\n").first { $0.contains(job.id) })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["verdict"] as? String == "current")
            let result = try #require(object["result"] as? [String: Any])
            #expect(result["status"] as? String == "succeeded")
            #expect(result["output"] as? String == "hello")
            #expect(object["offset"] is Int)
        }

        @Test("warren results --follow --idle gives up, exit 1, when the broker stays out of reach that long")
        func followGivesUpWithoutTheBroker() throws {
            let (vhost, url) = try Chaos.addVirtualHost("follow-idle")
            // Idle long enough for the broker to drop it first, however slowly rabbitmqctl starts on a loaded machine.
            let follower = try ChildProcess(
                TestEnvironment.warrenBinary, ["results", "--follow", "--idle", "20", "--url", url])
            defer { follower.terminate() }
            Thread.sleep(forTimeInterval: 1)
            // Deleting the virtual host closes the follower's connection, and refuses it any other.
            try Chaos.brokerCtl(["delete_vhost", vhost])
            #expect(follower.waitForExit(timeout: .seconds(60)) == 1)
            #expect(follower.stderr.contains("lost the broker"), "\(follower.stderr)")
            #expect(follower.stderr.contains("s, the broker out of reach ("), "\(follower.stderr)")
            #expect(follower.stderr.contains("giving up"), "\(follower.stderr)")
        }

        @Test(arguments: ["inf", "1e17", "0", "-1", "31536001"])
        func idleOutOfRangeIsRefused(_ idle: String) throws {
            let output = try CLI.run(["results", "--idle=\(idle)", "--url", try TestEnvironment.brokerURL])
            #expect(output.status == 64, "\(output.stderr)")
            #expect(output.stderr.contains("--idle must be seconds above 0 and at most 31536000"), "\(output.stderr)")
        }

        @Test("warren results reports a stored message that is no result on stderr, with its offset, and reads on")
        func unreadableStoredResult() throws {
            let url = try TestEnvironment.brokerURL
            // Straight into the stream, through the default exchange, as workers append their batches.
            try ForeignPublisher.publish(Array("not a result".utf8), url: url, routingKey: Topology.resultsStream)
            let job = try Self.runEchoJobs(["after"])[0]

            let output = try CLI.run(["results", "--since", "10m", "--job", job.id, "--url", url])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout.hasPrefix("succeeded \(job.id)"), "the result after it is still read")
            #expect(output.stderr.contains("unreadable result message"), "\(output.stderr)")
            #expect(output.stderr.range(of: #"at offset \d+"#, options: .regularExpression) != nil, "\(output.stderr)")
        }

        @Test("warren results reads without removing: every reader sees the stored results, --offset resumes")
        func storedResultsStay() throws {
            let url = try TestEnvironment.brokerURL
            let jobs = try Self.runEchoJobs((1...3).map { .number(Double($0)) })
            let filter = jobs.flatMap { ["--job", $0.id] }

            var offsets: [String: Int] = [:]
            for reader in 1...2 {
                let output = try CLI.run(["results", "--json", "--since", "10m", "--url", url] + filter)
                #expect(output.status == 0, "reader \(reader): \(output.stderr)")
                let objects = try output.stdout.split(separator: "\n").map {
                    try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
                }
                let ids = objects.compactMap { ($0["result"] as? [String: Any])?["jobId"] as? String }
                #expect(Set(ids) == Set(jobs.map(\.id)), "reader \(reader) sees every result")
                for object in objects {
                    let id = try #require((object["result"] as? [String: Any])?["jobId"] as? String)
                    offsets[id] = try #require(object["offset"] as? Int)
                }
            }
            // Resuming at an offset reads the stored message there, and those after it: results stored together
            // (one batch) share an offset.
            let last = try #require(offsets.values.max())
            let resumed = try CLI.run(["results", "--offset", "\(last)", "--url", url] + filter)
            let resumedIDs = resumed.stdout.split(separator: "\n").map { String($0.split(separator: " ")[1]) }
            #expect(!resumedIDs.isEmpty && Set(resumedIDs) == Set(jobs.map(\.id).filter { offsets[$0] == last }))
            let none = try CLI.run(["results", "--since", "now", "--idle", "0.5", "--url", url] + filter)
            #expect(none.status == 0 && none.stdout.isEmpty)
        }

        @Test("warren results without --follow ends with what was stored when it started, while results keep coming")
        func endsWhileResultsKeepComing() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("busy")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let first = try Producer.forTests().enqueue(
                JobRequest(type: "echo", input: "first", queue: queue), watch: true)
            // Results stored many times a second, far more often than --idle, until the reader is done.
            let producing = try ChildProcess(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", #"while :; do "$0" enqueue echo --queue "$1" --url "$2" > /dev/null; done"#,
                    TestEnvironment.warrenBinary.path, queue, url,
                ],
                name: "enqueue loop")
            defer { producing.terminate() }
            let output = try CLI.run(["results", "--since", "10m", "--idle", "3", "--url", url], timeout: .seconds(60))
            #expect(output.status == 0, "\(output.stderr)")
            #expect(output.stdout.contains(first.id))
        }

        /// Runs `echo` jobs with these inputs through a worker of their own and returns them once their results are
        /// stored.
        static func runEchoJobs(_ inputs: [JSONValue]) throws -> [OperationDescriptor] {
            let queue = TestEnvironment.uniqueName("stored")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let jobs = try Producer.forTests().enqueue(inputs.map { JobRequest(type: "echo", input: $0, queue: queue) })
            _ = try tap.waitForResults(jobs.map(\.id))
            return jobs
        }
    }
}
