import AMQP
import Foundation

/// Job queues that turn out to be streams. A stream keeps its messages and hands every one to every consumer, from
/// where the consumer starts (the next message, by default): each worker would run each job, and jobs published
/// while no worker consumed would never run. A worker does not consume one. Its deliveries carry the broker's
/// `x-stream-offset` header, which a producer could also set on a job: the queue is asked first (a declaration as
/// a stream that the broker accepts), and a queue it cannot tell is only warned of.
extension WorkerSession {
    /// Whether `delivery`, which carries an `x-stream-offset` header, came from a stream: the worker then stops
    /// consuming it, and the job is not run here (the stream keeps it).
    func refusesStream(_ delivery: Delivery) throws -> Bool {
        let queue = queue(of: delivery)
        if streamQueues.contains(queue) {
            acks.acknowledge(delivery.deliveryTag)  // one delivered before the consumer went
            return true
        }
        guard !streamSuspects.contains(queue) else { return false }
        guard try Topology.isStream(queue, on: connection) else {
            streamSuspects.insert(queue)
            logger.warning(
                """
                jobs from this queue carry an x-stream-offset header, as deliveries of a stream do: if it is a \
                stream, every worker runs each of its jobs; give workers classic or quorum queues
                """, metadata: ["queue": "\(queue)"])
            return false
        }
        streamQueues.insert(queue)
        logger.error(
            """
            not consuming this queue: it is a stream, which hands every job to every worker and keeps it; give \
            workers classic or quorum queues
            """, metadata: ["queue": "\(queue)"])
        acks.acknowledge(delivery.deliveryTag)
        try cancelConsumers(of: queue)
        return true
    }
}
