import AMQP
import Foundation

/// A job the worker holds: delivered, not yet settled with the broker.
///
/// Thread safety: confined to the worker's broker thread.
struct InFlightJob {
    let descriptor: OperationDescriptor
    let delivery: Delivery
    let attempt: Int
    let receivedAt: Date
    let operation: JobOperation
}

/// What to do with a delivery once the broker confirmed every message published on its behalf.
///
/// Thread safety: confined to the worker's broker thread.
final class Settlement {
    enum Action { case ack, requeue }

    let deliveryTag: UInt64
    let action: Action
    var unconfirmed: Int
    var refused = false

    init(deliveryTag: UInt64, action: Action, unconfirmed: Int) {
        self.deliveryTag = deliveryTag
        self.action = action
        self.unconfirmed = unconfirmed
    }
}
