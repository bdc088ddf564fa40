import AMQP
import Foundation
import Logging
import Testing

@testable import Warren

/// The pieces a worker's components are made from, without a broker.
enum WorkerParts {
    static let url = "amqp://guest:guest@localhost:5672/%2F"
    static let logger = Logger(label: "warren.tests")

    /// A configuration without a crash journal, so that nothing is written.
    static func configuration(_ change: (inout Worker.Configuration) -> Void = { _ in }) -> Worker.Configuration {
        var configuration = Worker.Configuration(url: url)
        configuration.crashJournalDirectory = nil
        configuration.localQueues = ["default": 2]
        change(&configuration)
        return configuration
    }

    /// A link whose connection never opened: every broker call throws `closed`.
    static func link() throws -> BrokerLink {
        BrokerLink(
            connection: AMQPConnection(unconnected: try AMQPConfiguration(url: url)), logger: logger)
    }

    /// A delivery of a job message with `body`, `headers` and `properties`.
    static func delivery(
        tag: UInt64 = 1, body: [UInt8] = [], redelivered: Bool = false, consumerTag: String = "c",
        routingKey: String = "q", properties: MessageProperties = MessageProperties()
    ) -> Delivery {
        Delivery(
            channel: 1, consumerTag: consumerTag, deliveryTag: tag, redelivered: redelivered, exchange: "",
            routingKey: routingKey, properties: properties, body: body)
    }

    /// A job the worker holds, with `descriptor`, whose operation reports to `report`.
    static func job(
        _ descriptor: OperationDescriptor, delivery: Delivery? = nil, queue: String = "q",
        localQueue: String = "default", receivedAt: Date = Date(), timeLimit: Duration? = nil,
        report: @escaping @Sendable (FinishedJob) -> Void = { _ in },
        body: RegisteredOperation.Body = .blocking { _, _ in .null }
    ) -> InFlightJob {
        let operation = JobOperation(
            job: JobContext(descriptor: descriptor, attempt: 1, logger: logger), input: descriptor.input, body: body,
            report: report)
        return InFlightJob(
            descriptor: descriptor, delivery: delivery ?? self.delivery(), generation: 1, queue: queue,
            localQueue: localQueue, attempt: 1, receivedAt: receivedAt, operation: operation, timeLimit: timeLimit)
    }

    /// A job with id `id` and `dependencies`.
    static func job(_ id: String, dependsOn dependencies: [String] = [], receivedAt: Date = Date()) -> InFlightJob {
        var descriptor = TestJobs.descriptor(id: id)
        descriptor.dependencies = dependencies.isEmpty ? nil : dependencies
        return job(descriptor, receivedAt: receivedAt)
    }
}

/// Records an issue, for the `else` of a `guard case`: `return unexpected("not queued")`.
func unexpected(_ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
    Issue.record(comment, sourceLocation: sourceLocation)
}
