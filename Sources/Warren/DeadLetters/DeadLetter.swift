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
    /// (`rejected`, `expired`, `maxlen`, `delivery_limit`) for messages the broker dead-lettered itself; `-` when
    /// neither says.
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
    /// What could be read of the body's top-level object (nothing when it was not read).
    let salvaged: SalvagedDescriptor

    /// - Parameter readingBody: Whether to read the job's id, type, key and sequence from the body; without, the
    ///   id and type come from the message's properties.
    init(_ delivery: Delivery, readingBody: Bool = true) {
        let headers = delivery.properties.headers ?? [:]
        let death = Self.firstDeath(in: headers)
        reason = headers[Topology.deadReasonHeader]?.stringValue ?? death?["reason"]?.stringValue ?? "-"
        // Read as the worker read it for the failed result: a valid descriptor's id and type are its first ones.
        salvaged =
            reason == "oversized" || !readingBody ? SalvagedDescriptor() : JobDecoder.salvage(from: delivery.body)
        jobID = [salvaged.id, delivery.properties.messageID].lazy.compactMap { $0 }
            .first { OperationDescriptor.problem(withID: $0) == nil }
        type = salvaged.type ?? delivery.properties.type
        message = headers[Topology.deadMessageHeader]?.stringValue
        queue = headers[Topology.deadQueueHeader]?.stringValue ?? death?["queue"]?.stringValue
        size = delivery.body.count
        body = delivery.body
        properties = delivery.properties
    }

    /// The broker's reason and the queue it dead-lettered the message from, for a message the broker dead-lettered
    /// itself (its first `x-death` entry, and no worker's reason in its headers); `nil` for the others. Reads
    /// headers only.
    static func brokerDeath(of properties: MessageProperties) -> (reason: String, queue: String?)? {
        let headers = properties.headers ?? [:]
        guard headers[Topology.deadReasonHeader] == nil, let death = firstDeath(in: headers),
            let reason = death["reason"]?.stringValue
        else { return nil }
        return (reason, death["queue"]?.stringValue)
    }

    private static func firstDeath(in headers: AMQPTable) -> AMQPTable? {
        guard case .array(let deaths)? = headers["x-death"], case .table(let first)? = deaths.first else { return nil }
        return first
    }
}
