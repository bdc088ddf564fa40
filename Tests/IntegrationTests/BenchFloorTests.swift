import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    /// The benchmark's floor: the raw baseline worker with the hop and the results stream, against the real broker.
    @Suite struct BenchFloor {
        @Test("the floor's worker appends every result to its stream in Warren's batches, and acks every job")
        func resultsLandInTheStream() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("floor-jobs")
            let resultQueue = queue + "-results"
            let stream = queue + "-stream"
            defer { [queue, resultQueue, stream].forEach(BrokerProbe.delete) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            try connection.declareQueue(queue, channel: 1)
            try connection.declareQueue(resultQueue, channel: 1)
            try connection.declareQueue(stream, arguments: ["x-queue-type": "stream"], channel: 1)

            let prefetch = 10
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                [
                    "bench", "baseline-worker", "--url", url, "--queue", queue, "--result-queue", resultQueue,
                    "--prefetch", "\(prefetch)", "--variant", "operation-queue", "--variant", "results-stream",
                    "--results-stream", stream,
                ],
                name: "floor worker")
            defer { worker.terminate() }
            try waitFor("the worker consumes", worker) { try BrokerProbe.consumers(of: queue) == 1 }

            let ids = (0..<60).map { "floor-job-\($0)" }
            for id in ids {
                try connection.publish(
                    Array("{}".utf8), exchange: "", routingKey: queue,
                    properties: MessageProperties(persistent: true, messageID: id), channel: 1)
            }
            try waitFor("every result reaches the result queue", worker) {
                Int(try BrokerProbe.depth(of: resultQueue)) == ids.count
            }

            // Read from the stream's start: every stored message is a batch of results, none larger than the window.
            try connection.openChannel(2)
            try connection.qos(prefetchCount: 1_000, channel: 2)
            try connection.consume(stream, arguments: ["x-stream-offset": .string("first")], channel: 2)
            let pump = AMQPEventPump(connection)
            var batches: [Delivery] = []
            var stored = 0
            pump.route(2) { delivery in
                batches.append(delivery)
                stored += ResultBatch.results(in: delivery.body, type: delivery.properties.type).count
            }
            let complete = try pump.dispatch(until: .now + .seconds(30)) { stored >= ids.count }
            #expect(complete, "\(stored) of \(ids.count) results in the stream")
            #expect(stored == ids.count)
            for batch in batches {
                #expect(batch.properties.type == ResultBatch.messageType)
                let results = ResultBatch.results(in: batch.body, type: batch.properties.type)
                #expect((1...prefetch).contains(results.count), "a batch of \(results.count) results")
                #expect(results.allSatisfy { (try? $0.get().type) == "echo" }, "Warren reads each result")
            }

            try waitFor("every job is acknowledged", worker) { try Self.unsettled(in: queue) == 0 }
        }

        @Test("the results-stream variant and its stream queue are asked for together")
        func streamNamedWithItsVariant() throws {
            let url = try TestEnvironment.brokerURL
            let base = ["bench", "baseline-worker", "--url", url, "--queue", "q", "--result-queue", "r"]
            for (arguments, message) in [
                (["--variant", "results-stream"], "--variant results-stream needs --results-stream QUEUE"),
                (["--results-stream", "s"], "--results-stream s needs --variant results-stream"),
            ] {
                let output = try CLI.run(base + arguments, timeout: .seconds(30))
                #expect(output.status == 64, "\(arguments): \(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
            }
        }

        /// Waits until `isDone` holds, for at most a minute, while `worker` runs.
        private func waitFor(_ what: String, _ worker: ChildProcess, _ isDone: () throws -> Bool) throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while try !isDone() {
                guard worker.process.isRunning, ContinuousClock.now < deadline else {
                    Issue.record("not done: \(what). Worker's stderr:\n\(worker.stderr)")
                    throw ChildProcessError.timeout
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }

        /// Ready and unacknowledged messages of `queue`, as the broker counts them.
        private static func unsettled(in queue: String) throws -> Int {
            let directory = try #require(TestEnvironment.brokerDirectory, "WARREN_BROKER_DIR is set by scripts/test")
            let ctl = try ChildProcess(
                TestEnvironment.packageRoot.appendingPathComponent("scripts/broker"),
                [
                    "ctl", directory, "list_queues", "name", "messages_ready", "messages_unacknowledged",
                    "--no-table-headers", "--quiet",
                ])
            #expect(ctl.waitForExit(timeout: .seconds(120)) == 0, "\(ctl.stderr)")
            let line = try #require(ctl.stdout.split(separator: "\n").first { $0.hasPrefix(queue + "\t") })
            return line.split(separator: "\t").dropFirst().compactMap { Int($0) }.reduce(0, +)
        }
    }
}
