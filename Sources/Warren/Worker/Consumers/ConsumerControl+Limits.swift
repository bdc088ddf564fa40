import AMQP

/// Prefetch on job queues that refuse a channel-wide limit: quorum queues, and queues of unknown type.
///
/// A quorum queue takes only a limit per consumer (`basic.qos` with global=false), fixed when the consumer starts,
/// so the worker changes it by starting the queue's consumer again: the deliveries of the consumer it cancels stay
/// with the worker, unacknowledged, and count against no limit any more, so the new consumer's limit is what the
/// queue's budget leaves. Each job queue's budget is the whole prefetch: jobs held from it and not parked (nor held
/// for an unreachable queue). A consumer starts again once it is full and its limit falls short of what its budget
/// allows by a quarter of the prefetch (at least one job): as jobs park, and as the jobs of cancelled consumers end.
extension ConsumerControl {
    /// Has the consumers' limits checked when the turn ends, if the worker renews consumers.
    func consumerLimitsMayFallShort() {
        if renewsConsumers { consumerLimitsStale = true }
    }

    /// A job of this connection left the worker: a consumer's limit may now fall short, if the job came from a
    /// consumer since cancelled, or its queue's consumer is not at the whole budget.
    func left(_ job: InFlightJob) {
        guard renewsConsumers, !consumerLimitsStale else { return }
        consumerLimitsStale = consumers[job.delivery.consumerTag] == nil || consumerLimits[job.queue] != basePrefetch
    }

    /// A job delivery came from `queue`: its consumer may be full now, with a limit below the budget.
    func delivered(from queue: String) {
        if renewsConsumers, consumerLimits[queue] != basePrefetch { consumerLimitsStale = true }
    }

    /// Starts the consumer of each job queue again whose limit falls short of its budget, with the limit the budget
    /// allows.
    /// - Parameters:
    ///   - jobs: The jobs in flight.
    ///   - held: The deliveries held for a queue out of reach.
    func renewConsumersIfDue(jobs: some Collection<InFlightJob>, held: [Delivery]) throws {
        guard consumerLimitsStale, isConsuming, !lifecycle.isStopping else { return }
        consumerLimitsStale = false
        let budget = basePrefetch
        let generation = link.generation
        var running: [String: Int] = [:]  // held from the queue and not parked, from any consumer
        var fromConsumer: [String: Int] = [:]  // held from the queue's consumer, parked or not
        for job in jobs where job.generation == generation {
            if !job.isParked { running[job.queue, default: 0] += 1 }
            if consumers[job.delivery.consumerTag] != nil { fromConsumer[job.queue, default: 0] += 1 }
        }
        for delivery in held {
            if let queue = consumers[delivery.consumerTag] { fromConsumer[queue, default: 0] += 1 }
        }
        for queue in activeQueues where unreachableQueues[queue] == nil {
            let allowed = budget - running[queue, default: 0]
            // What the broker may still deliver to the queue's consumer: nothing, once it is full. Only a full
            // consumer (or none) is replaced: a quorum queue sends deliveries on their way to a consumer being
            // cancelled back to the queue, which delivers them again marked redelivered.
            let deliverable = (consumerLimits[queue] ?? 0) - fromConsumer[queue, default: 0]
            guard consumerLimits[queue] == nil || deliverable <= 0, allowed - deliverable >= max(1, budget / 4)
            else { continue }
            try cancelConsumers(of: queue)
            try link.connection.qos(prefetchCount: UInt16(allowed), global: false, channel: BrokerLink.Channel.jobs)
            consumerLimits[queue] = allowed
            try consumeJobs(from: queue)
        }
        retiredConsumers = retiredConsumers.filter { tag, _ in
            jobs.contains { $0.delivery.consumerTag == tag && $0.generation == generation }
        }
    }
}
