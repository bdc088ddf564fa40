import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct StaleResults {
        @Test("warren results keeps the newest result per key and reports an older arrival as stale")
        func staleDiscard() throws {
            let queue = TestEnvironment.uniqueName("stale")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let key = TestEnvironment.uniqueName("totals")
            // The older calculation is slow, the newer fast: the older result arrives last, as in ListAdder.
            let older = try producer.enqueue(JobRequest(type: "sum", input: .numbers([1, 2, 3, 4, 5], delayMs: 200), key: key, queue: queue))
            try worker.waitForStart(of: older.id)
            let newer = try producer.enqueue(JobRequest(type: "sum", input: .numbers([10, 20]), key: key, queue: queue))
            _ = try tap.waitForResults([older.id, newer.id])

            let output = try CLI.run(["results", "--url", try TestEnvironment.brokerURL])
            #expect(output.status == 0, "\(output.stderr)")
            let lines = output.stdout.split(separator: "\n")
            let newerLine = try #require(lines.first { $0.contains(newer.id) })
            let olderLine = try #require(lines.first { $0.contains(older.id) })
            #expect(newerLine.hasPrefix("succeeded \(newer.id)"))
            #expect(olderLine.hasPrefix("stale \(older.id)"))
            #expect(olderLine.contains("newer seq=\(newer.sequence)"))
        }

        @Test("warren results --follow prints results as they arrive, as JSON lines with --json")
        func follow() throws {
            let queue = TestEnvironment.uniqueName("follow")
            defer { BrokerProbe.delete(queue) }
            _ = try CLI.run(["results", "--url", try TestEnvironment.brokerURL])  // start from an empty store
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
        }
    }
}
