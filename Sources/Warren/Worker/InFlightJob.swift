import AMQP
import Foundation

/// A job the worker holds: delivered, not yet settled with the broker.
///
/// A class: it is looked up several times per job, and a copy of it would retain and release every field of its
/// descriptor and delivery each time.
/// Thread safety: confined to the worker's broker thread.
final class InFlightJob {
    let descriptor: OperationDescriptor
    /// The latest delivery of the job: replaced when the broker redelivers it after a reconnect.
    var delivery: Delivery
    /// The connection generation `delivery` belongs to; its tag is dead on any other.
    var generation: Int
    /// The broker queue it came from.
    let queue: String
    /// The local queue it runs on.
    let localQueue: String
    let attempt: Int
    let receivedAt: Date
    let operation: JobOperation

    init(
        descriptor: OperationDescriptor, delivery: Delivery, generation: Int, queue: String, localQueue: String,
        attempt: Int, receivedAt: Date, operation: JobOperation
    ) {
        self.descriptor = descriptor
        self.delivery = delivery
        self.generation = generation
        self.queue = queue
        self.localQueue = localQueue
        self.attempt = attempt
        self.receivedAt = receivedAt
        self.operation = operation
    }
}

/// What to do with a delivery once the broker confirmed every message published on its behalf.
///
/// Thread safety: confined to the worker's broker thread.
final class Settlement {
    enum Action { case ack, requeue }

    /// A confirm a settlement waits for.
    enum Confirm {
        /// The broker's confirm of the publish with this number on the confirm channel.
        case publish(UInt64)
        /// The stream message that will store the result (``StoredResults``): counted once it is published, or
        /// once it is confirmed while many earlier ones wait for their confirms (``SentBatches``).
        case storedResults
    }

    let deliveryTag: UInt64
    let action: Action
    var unconfirmed: Int
    var refused = false
    /// The succeeded or cancelled result being confirmed, if any.
    let result: JobResult?

    init(deliveryTag: UInt64, action: Action, unconfirmed: Int, result: JobResult? = nil) {
        self.deliveryTag = deliveryTag
        self.action = action
        self.unconfirmed = unconfirmed
        self.result = result
    }
}
