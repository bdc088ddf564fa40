import AMQP

/// What to do with a delivery once the broker confirmed every message published on its behalf.
///
/// Thread safety: confined to the worker's broker thread.
final class Settlement {
    enum Action { case ack, requeue }

    /// A confirm a settlement waits for.
    enum Confirm {
        /// The broker's confirm of the publish with this number on the confirm channel.
        case publish(UInt64)
        /// The same, for the publish of the job's result to its reply queue or the results exchange.
        case reply(UInt64)
        /// The stream message that will store the result (``StoredResults``): counted once it is published, or
        /// once it is confirmed while many earlier ones wait for their confirms (``SentBatches``).
        case storedResults
    }

    let deliveryTag: UInt64
    /// The channel of the delivery: the jobs channel, or that of the broker's dead letters
    /// (``BrokerLink/Channel/deadWatch``).
    let channel: UInt16
    let action: Action
    var unconfirmed: Int
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
        deliveryTag: UInt64, channel: UInt16 = BrokerLink.Channel.jobs, action: Action, unconfirmed: Int,
        result: JobResult? = nil, delivery: Delivery? = nil, deadLettered: (delivery: Delivery, error: JobError)? = nil
    ) {
        self.deliveryTag = deliveryTag
        self.channel = channel
        self.deadLettered = deadLettered
        self.action = action
        self.unconfirmed = unconfirmed
        self.result = result
        self.delivery = delivery
    }
}
