import AMQP

/// A message in the dead-letter queue, as `warren dead list` shows it.
public struct DeadLetter: Sendable {
    /// The job id, as the worker that dead-lettered it found it for the failed result: the first `id` member of the
    /// body's top-level object (unless the body was too big to read: reason `oversized`), else the message's
    /// `message_id`; the first of these that is a valid job id.
    public var jobID: String?
    /// The operation type, as the failed result gives it: the first `type` member of the body's top-level object
    /// (unless it was too big to read), else the message's AMQP `type` property.
    public var type: String?
    /// Why it was dead-lettered (`x-warren-dead-reason`): a `JobError` code, or the broker's reason
    /// (`rejected`, `expired`, `maxlen`) for messages the broker dead-lettered itself; `-` when neither says.
    public var reason: String
    /// The explanation (`x-warren-dead-message`).
    public var message: String?
    /// The job queue it came from.
    public var queue: String?
    /// Body size in bytes.
    public var size: Int
    /// The original message, untouched.
    public var body: [UInt8]
    public var properties: MessageProperties
    /// The broker's reason, for a message the broker dead-lettered itself (no worker's reason in its headers).
    var brokerReason: String? {
        properties.headers?[Topology.deadReasonHeader] == nil && reason != "-" ? reason : nil
    }

    init(_ delivery: Delivery) {
        let headers = delivery.properties.headers ?? [:]
        let death = headers["x-death"].flatMap { value -> AMQPTable? in
            if case .array(let deaths) = value, case .table(let first)? = deaths.first { return first }
            return nil
        }
        reason = headers[Topology.deadReasonHeader]?.stringValue ?? death?["reason"]?.stringValue ?? "-"
        // Read as the worker read it for the failed result: a valid descriptor's id and type are its first ones.
        let salvaged = reason == "oversized" ? SalvagedDescriptor() : JobDecoder.salvage(from: delivery.body)
        jobID = [salvaged.id, delivery.properties.messageID].lazy.compactMap { $0 }
            .first { OperationDescriptor.problem(withID: $0) == nil }
        type = salvaged.type ?? delivery.properties.type
        message = headers[Topology.deadMessageHeader]?.stringValue
        queue = headers[Topology.deadQueueHeader]?.stringValue ?? death?["queue"]?.stringValue
        size = delivery.body.count
        body = delivery.body
        properties = delivery.properties
    }
}
