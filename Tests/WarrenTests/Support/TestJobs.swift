import AMQP
import Foundation
import Logging

@testable import Warren

/// Builds the pieces a worker would build for a delivery, without a broker.
enum TestJobs {
    static let logger = Logger(label: "warren.tests")

    static func descriptor(
        id: String = UUID().uuidString.lowercased(), type: String = "test", input: JSONValue = .null,
        priority: JobPriority = .normal, sequence: UInt64 = 1, key: String? = nil, deadline: Date? = nil
    ) -> OperationDescriptor {
        OperationDescriptor(
            id: id, type: type, input: input, priority: priority, sequence: sequence, key: key, deadline: deadline)
    }

    static func context(
        id: String = UUID().uuidString.lowercased(), priority: JobPriority = .normal, deadline: Date? = nil,
        attempt: Int = 1
    ) -> JobContext {
        JobContext(
            descriptor: descriptor(id: id, priority: priority, deadline: deadline), attempt: attempt, logger: logger)
    }

    /// An operation running blocking `code`, reporting to `collector`.
    static func blocking(
        id: String = UUID().uuidString.lowercased(), priority: JobPriority = .normal, deadline: Date? = nil,
        input: JSONValue = .null, collector: ReportCollector,
        _ code: @escaping @Sendable (JSONValue, JobContext) throws -> JSONValue
    ) -> JobOperation {
        JobOperation(
            job: context(id: id, priority: priority, deadline: deadline), input: input, body: .blocking(code),
            report: collector.report)
    }

    /// An operation running asynchronous `code`, reporting to `collector`.
    static func asynchronous(
        id: String = UUID().uuidString.lowercased(), priority: JobPriority = .normal, input: JSONValue = .null,
        collector: ReportCollector, _ code: @escaping @Sendable (JSONValue, JobContext) async throws -> JSONValue
    ) -> JobOperation {
        JobOperation(
            job: context(id: id, priority: priority), input: input, body: .asynchronous(code),
            report: collector.report)
    }

    /// An operation running the code `registry` holds for `type`, as a worker would.
    static func registered(
        _ type: String, in registry: OperationRegistry, input: JSONValue, id: String = UUID().uuidString.lowercased(),
        collector: ReportCollector
    ) throws -> JobOperation {
        guard let registered = registry[type] else { throw UnknownType(type: type) }
        return JobOperation(
            job: JobContext(descriptor: descriptor(id: id, type: type, input: input), attempt: 1, logger: logger),
            input: input, body: registered.body, report: collector.report)
    }

    struct UnknownType: Error {
        let type: String
    }

    /// A job the worker holds, waiting for its turn under a rate limit: only its id, type and priority matter.
    static func waiting(_ id: String, _ priority: JobPriority = .normal, type: String = "api") -> InFlightJob {
        let descriptor = OperationDescriptor(id: id, type: type, priority: priority, sequence: 1)
        let delivery = Delivery(
            channel: 1, consumerTag: "c", deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q",
            properties: MessageProperties(), body: [])
        let operation = JobOperation(
            job: JobContext(descriptor: descriptor, attempt: 1, logger: logger), input: .null,
            body: .blocking { _, _ in .null }, report: { _ in })
        return InFlightJob(
            descriptor: descriptor, delivery: delivery, generation: 1, queue: "q", localQueue: "default", attempt: 1,
            receivedAt: Date(), operation: operation)
    }
}

extension JobOutcome {
    var isSucceeded: Bool {
        if case .succeeded = self { return true }
        return false
    }
}

extension JSONValue {
    /// Parses JSON text, for inputs and outputs that read better as JSON than as enum cases.
    static func parse(_ text: String) throws -> JSONValue {
        try WireCoding.decoder.decode(JSONValue.self, from: Data(text.utf8))
    }
}
