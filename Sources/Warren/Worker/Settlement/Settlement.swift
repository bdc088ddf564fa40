import AMQP

/// What to do with a delivery once the broker confirmed every message published on its behalf.
///
/// A settlement is made before those publishes (``Settlements/settlement(of:action:channel:result:delivery:deadLettered:)``),
/// travels with each as the payload its confirm answers, and is applied once the last is answered
/// (``Settlements/settle(_:)``).
/// Thread safety: confined to the worker's broker thread.
final class Settlement {
    enum Action { case ack, requeue }

    let deliveryTag: UInt64
    /// The channel of the delivery: the jobs channel, or that of the broker's dead letters
    /// (``BrokerLink/Channel/deadWatch``).
    let channel: UInt16
    let action: Action
    /// The confirms it still waits for: of its publishes, and of the stream batch that stores its result.
    var unconfirmed = 0
    /// Whether all its publishes were made: until then, an answer that leaves nothing unconfirmed does not apply it.
    var isComplete = false
    /// Whether the broker refused a publish other than the result's: the job is held (a refused dead letter) or
    /// requeued (a refused delayed copy).
    var refused = false
    /// The confirm number of the result's publish, and whether the broker refused that one.
    var replyNumber: UInt64?
    var replyRefused = false
    /// The succeeded or cancelled result being confirmed, if any.
    let result: JobResult?
    /// The job's delivery, dead-lettered if the broker refuses its result; `nil` when the settlement dead-letters
    /// the job already.
    let delivery: Delivery?
    /// The job's delivery and error when the settlement dead-letters it: a dead letter the broker refuses is
    /// published again later, the job held meanwhile.
    let deadLettered: (delivery: Delivery, error: JobError)?

    init(
        deliveryTag: UInt64, channel: UInt16 = BrokerLink.Channel.jobs, action: Action, result: JobResult? = nil,
        delivery: Delivery? = nil, deadLettered: (delivery: Delivery, error: JobError)? = nil
    ) {
        self.deliveryTag = deliveryTag
        self.channel = channel
        self.deadLettered = deadLettered
        self.action = action
        self.result = result
        self.delivery = delivery
    }
}
