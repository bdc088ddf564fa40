import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct ClosedConnections {
        @Test("a closed connection refuses every call with a clear error, and closing it again does nothing")
        func connection() throws {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            try connection.openChannel(1)
            connection.close()
            #expect(!connection.isOpen)
            let error = #expect(throws: AMQPError.self) {
                try connection.publish([1], exchange: "", routingKey: "nowhere", channel: 1)
            }
            #expect(error?.code == .closed)
            #expect(error?.message == "cannot publish to exchange '': the connection was closed (close() was called)")
            #expect(throws: AMQPError.self) { try connection.nextEvent() }
            #expect(throws: AMQPError.self) { try connection.declareQueue("", channel: 1) }
            #expect(throws: AMQPError.self) { try connection.ack(1, channel: 1) }
            #expect(throws: AMQPError.self) { try connection.get("nowhere", channel: 1) }
            #expect(throws: AMQPError.self) { try connection.openChannel(2) }
            #expect(connection.waitForActivity(wakeUp: nil, timeout: .seconds(5)), "no wait: the next call says why")
            #expect(connection.socketDescriptor == -1)
            connection.holdOutput()
            #expect(connection.heldByteCount == 0)
            connection.close()
        }

        @Test("a closed producer throws 'the producer was closed' and publishes nothing")
        func producer() throws {
            let queue = TestEnvironment.uniqueName("closed-producer")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            try producer.enqueue(JobRequest(type: "echo", queue: queue))
            producer.close()
            let error = #expect(throws: WarrenError.self) {
                try producer.enqueue(JobRequest(type: "echo", queue: queue))
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message == "the producer was closed")
            #expect(throws: WarrenError.self) { try producer.cancel(jobIDs: ["x"]) }
            #expect(throws: WarrenError.self) { try producer.workerStatuses(timeout: .seconds(1)) }
            #expect(throws: WarrenError.self) { try producer.waitForResult(of: "x", timeout: .seconds(1)) }
            producer.close()
            #expect(try BrokerProbe.depth(of: queue) == 1)
        }
    }
}
