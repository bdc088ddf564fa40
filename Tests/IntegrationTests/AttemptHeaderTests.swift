import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    /// `x-warren-attempt` as other clients may set it: any AMQP integer, including the extremes.
    @Suite struct AttemptHeader {
        /// A connection with channel 1 open, on which `queue` is declared as a worker declares it.
        static func connection(declaring queue: String) throws -> AMQPConnection {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            try connection.openChannel(1)
            try Topology.declareJobQueue(queue, priorities: false, on: connection, channel: 1)
            return connection
        }

        /// Publishes a job (an `echo` of its id unless `body` says otherwise) carrying `attempt` in its header.
        static func publish(
            id: String, attempt: Int64, to queue: String, on connection: AMQPConnection,
            body: String? = nil
        ) throws {
            let body = body ?? #"{"version":1,"id":"\#(id)","type":"echo","input":"\#(id)"}"#
            try connection.publish(
                Array(body.utf8), exchange: "", routingKey: queue,
                properties: MessageProperties(
                    contentType: "application/json", headers: [Topology.attemptHeader: .int(attempt)],
                    persistent: true),
                channel: 1)
        }

        @Test("the largest attempt number, redelivered, and numbers below 1: the worker runs each job and carries on")
        func extremes() throws {
            let queue = TestEnvironment.uniqueName("attempts")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let connection = try Self.connection(declaring: queue)
            defer { connection.close() }
            let (largest, lowest, zero) = (
                TestEnvironment.uniqueName("largest"), TestEnvironment.uniqueName("lowest"),
                TestEnvironment.uniqueName("zero")
            )
            try Self.publish(id: largest, attempt: .max, to: queue, on: connection)
            // Taken and given back unacknowledged: the next delivery is marked redelivered, which counts one more.
            let taker = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            try taker.openChannel(1)
            #expect(try taker.get(queue, channel: 1) != nil)
            taker.close()
            try Self.publish(id: lowest, attempt: .min, to: queue, on: connection)
            try Self.publish(id: zero, attempt: 0, to: queue, on: connection)

            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let results = try tap.waitForResults([largest, lowest, zero])
            #expect(results.allSatisfy { $0.status == .succeeded }, "\(results)")
            #expect(tap.results(for: largest).first?.attempt == Int(Int64.max))
            #expect(tap.results(for: largest).first?.redelivered == true)
            #expect(tap.results(for: lowest).first?.attempt == 1, "a number below 1 is no attempt number")
            #expect(tap.results(for: zero).first?.attempt == 1)
            #expect(worker.process.isRunning)
        }

        @Test("a retryable failure whose header says attempt −2^63 waits and ends like a first attempt")
        func negativeAttemptRetries() throws {
            let queue = TestEnvironment.uniqueName("attempts-neg")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let connection = try Self.connection(declaring: queue)
            defer { connection.close() }
            let id = TestEnvironment.uniqueName("neg")
            try Self.publish(
                id: id, attempt: .min, to: queue, on: connection,
                body: #"{"version":1,"id":"\#(id)","type":"fail","maxAttempts":2,"input":{"retryable":true}}"#)
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let result = try tap.waitForResult(id)
            #expect(result.status == .failed)
            #expect(result.attempt == 2, "attempt 1, retried once, then dead-lettered")
            #expect(worker.stderr.components(separatedBy: "job failed; retrying").count - 1 == 1)
            let line = try #require(worker.stderr.split(separator: "\n").first { $0.contains("job failed; retrying") })
            let delay = line.split(separator: " ").first { $0.hasPrefix("delayMs=") }.flatMap { Int($0.dropFirst(8)) }
            #expect((delay ?? 0) >= 750, "the first retry waits 1 s ± 25 %: \(line)")
            #expect(worker.process.isRunning)
        }
    }
}
