import AMQP
import Foundation
import Logging

/// The worker's consumers of its job queues and the prefetch that limits them: which queues it takes jobs from
/// (paused ones not; ones out of reach not until found again; streams never), and how many deliveries it holds.
///
/// Prefetch (`basic.qos`) is the worker's only backpressure. It follows the local queues' widths, raised by one for
/// each job the worker holds without running it (parked, or held for a queue out of reach), so that waiting jobs
/// never starve it of the jobs they wait for. A connection that consumes exactly one queue starts with the limit
/// per consumer, which costs the broker less; it goes channel-wide at the first change
/// (``useChannelWidePrefetch()``). Quorum queues take only a limit per consumer, changed by starting the consumer
/// again (``ConsumerControl+Limits``).
/// Thread safety: confined to the worker's broker thread.
final class ConsumerControl: WakesTheLoop {
    let link: BrokerLink
    let lifecycle: Lifecycle
    private let configuration: Worker.Configuration
    private let logger: Logger
    /// Job queue consumed, by consumer tag.
    private(set) var consumers: [String: String] = [:]
    /// Job queue of each consumer cancelled on this connection, by consumer tag: its deliveries may still be held.
    var retiredConsumers: [String: String] = [:]
    /// Whether the jobs channel is set up, so consumers can start.
    private(set) var isConsuming = false
    /// Broker queues this worker does not take jobs from (`warren pause`).
    private(set) var pausedQueues: Set<String> = []
    /// Job queues out of reach (their cluster node is down, or the broker cancelled their consumer), with when to
    /// look for each again.
    private(set) var unreachableQueues: [String: ContinuousClock.Instant] = [:]
    /// Job queues found to be streams, which the worker does not consume (``refusesStream(_:)``).
    private var streamQueues: Set<String> = []
    /// Job queues whose deliveries carried a stream offset but that could not be told to be streams: warned of once.
    private var streamSuspects: Set<String> = []
    /// Job queues found classic under `--quorum-queues`, and said so (once each).
    private var classicQueuesReported: Set<String> = []
    /// Whether the prefetch limits the job consumer alone (`basic.qos` with global=false) rather than the jobs
    /// channel. Per consumer, the broker's queue counts the consumer's deliveries itself; channel-wide, it asks the
    /// channel's limiter process before each delivery.
    private var prefetchPerConsumer = false
    /// Whether a job queue of this connection may refuse a channel-wide prefetch (a quorum queue): then each job
    /// queue's consumer keeps a limit of its own (``ConsumerControl+Limits``).
    var renewsConsumers = false
    /// The prefetch limit of each job queue's consumer, while ``renewsConsumers``.
    var consumerLimits: [String: Int] = [:]
    /// Whether a consumer's limit may fall short of what its queue's budget allows: checked when the turn ends.
    var consumerLimitsStale = false
    /// The prefetch the local queues' widths ask for, or the configuration's own.
    private(set) var basePrefetch: Int
    /// The prefetch in force on the jobs channel.
    private(set) var currentPrefetch: UInt16 = 0 {
        didSet { prefetchChanged(Int(currentPrefetch)) }
    }
    /// Told each change of the prefetch in force.
    private let prefetchChanged: (Int) -> Void

    /// How long the worker waits before it looks for an unreachable job queue again.
    static let unreachableQueueRetry = Duration.seconds(5)

    init(
        link: BrokerLink, lifecycle: Lifecycle, configuration: Worker.Configuration, logger: Logger,
        prefetchChanged: @escaping (Int) -> Void
    ) {
        self.link = link
        self.lifecycle = lifecycle
        self.configuration = configuration
        self.logger = logger
        self.prefetchChanged = prefetchChanged
        basePrefetch = configuration.effectivePrefetch
    }

    /// When an unreachable job queue is to be looked for again.
    var nextWake: ContinuousClock.Instant? { unreachableQueues.isEmpty ? nil : unreachableQueues.values.min() }

    /// The broker queues this worker takes jobs from: all but the paused ones.
    var activeQueues: [String] { configuration.queues.filter { !pausedQueues.contains($0) } }

    // MARK: - Setting up

    /// The connection was lost, or a new one is set up: no consumer yet.
    func reset() {
        consumers = [:]
        isConsuming = false
    }

    /// Opens the jobs channel of a new connection.
    func openJobsChannel() throws {
        try link.connection.openChannel(BrokerLink.Channel.jobs)
    }

    /// Declares the job queues on the jobs channel and sets the prefetch; consumers start with
    /// ``consumeActiveQueues()``.
    /// - Parameter heldJobs: Jobs held without running, which raise the prefetch by one each.
    func declareJobQueues(heldJobs: Int) throws {
        var channelWide = true
        unreachableQueues = [:]
        for queue in configuration.queues {
            guard let created = try declareJobQueue(queue) else {
                channelWide = false  // its type is unknown until it can be reached
                continue
            }
            if !created, configuration.quorumQueues,
                try Topology.isKnownClassicQueue(queue, on: link.connection),
                classicQueuesReported.insert(queue).inserted
            {
                logger.warning(
                    """
                    job queue is a classic queue, on one node: it existed before, and --quorum-queues makes only the \
                    queues that do not exist quorum queues; delete it once empty to have it made again
                    """,
                    metadata: ["queue": "\(queue)"])
            }
            if channelWide {
                channelWide =
                    created
                    ? !configuration.quorumQueues : try Topology.takesChannelWidePrefetch(queue, on: link.connection)
            }
        }
        renewsConsumers = !channelWide
        retiredConsumers = [:]
        currentPrefetch = UInt16(min(basePrefetch + heldJobs, 65_535))
        prefetchPerConsumer =
            renewsConsumers
            || heldJobs == 0 && configuration.queues.count == 1 && pausedQueues.isDisjoint(with: configuration.queues)
        if renewsConsumers {
            consumerLimits = [:]
            for queue in activeQueues { consumerLimits[queue] = basePrefetch }
            try link.connection.qos(
                prefetchCount: UInt16(basePrefetch), global: false, channel: BrokerLink.Channel.jobs)
        } else {
            try link.connection.qos(
                prefetchCount: currentPrefetch, global: !prefetchPerConsumer, channel: BrokerLink.Channel.jobs)
        }
        isConsuming = true
    }

    /// Starts the consumers of every queue that is neither paused nor out of reach.
    func consumeActiveQueues() throws {
        for queue in activeQueues where unreachableQueues[queue] == nil { try consumeJobs(from: queue) }
    }

    /// Declares job queue `queue`: whether this created it, or `nil` when its node is down, and the worker looks
    /// for it again later.
    func declareJobQueue(_ queue: String) throws -> Bool? {
        do {
            let created = try Topology.declareJobQueue(
                queue, priorities: configuration.priorityQueues, quorum: configuration.quorumQueues,
                on: link.connection, channel: BrokerLink.Channel.jobs)
            unreachableQueues[queue] = nil
            return created
        } catch let error as AMQPError where error.isQueueNodeDown {
            if unreachableQueues[queue] == nil {
                logger.warning(
                    "job queue is on a cluster node that is down; taking jobs from it once it returns",
                    metadata: ["queue": "\(queue)", "error": "\(error)"])
            }
            unreachableQueues[queue] = .now + Self.unreachableQueueRetry
            return nil
        }
    }

    // MARK: - Consumers

    /// Consumes `queue`, unless the worker takes no jobs or the queue is a stream.
    func consumeJobs(from queue: String) throws {
        guard lifecycle.consumes, !streamQueues.contains(queue) else { return }
        consumers[try link.connection.consume(queue, channel: BrokerLink.Channel.jobs)] = queue
    }

    /// The broker queue a job delivery came from: the only queue consumed, else its consumer's, or for a consumer
    /// already cancelled, the routing key it was published with.
    func queue(of delivery: Delivery) -> String {
        let queues = configuration.queues
        if queues.count == 1 { return queues[0] }
        return consumers[delivery.consumerTag] ?? retiredConsumers[delivery.consumerTag] ?? delivery.routingKey
    }

    /// Cancels the consumers of `queue`; the deliveries they brought stay with the worker, unacknowledged.
    func cancelConsumers(of queue: String) throws {
        for (tag, consumed) in consumers where consumed == queue {
            try link.connection.cancelConsumer(tag, channel: BrokerLink.Channel.jobs)
            consumers[tag] = nil
            retiredConsumers[tag] = queue
        }
    }

    /// Cancels every job consumer.
    /// - Parameter awaitingReply: Whether to wait for each cancel-ok: not when the worker stops, since a broker
    ///   that blocks the connection (a memory or disk alarm) reads nothing, and the stop must not wait for it.
    func cancelAll(awaitingReply: Bool = true) throws {
        guard awaitingReply else {
            for tag in consumers.keys {
                try link.connection.cancelConsumer(tag, channel: BrokerLink.Channel.jobs, awaitingReply: false)
            }
            consumers = [:]
            return
        }
        for queue in Set(consumers.values) { try cancelConsumers(of: queue) }
    }

    /// Forgets the consumers without cancelling them (a stop: their deliveries are sent back as they come).
    func forgetConsumers() {
        consumers = [:]
    }

    /// Starts consuming `queue` on a live connection (resumed, or reachable again), within the prefetch.
    func startConsumer(of queue: String) throws {
        guard isConsuming, unreachableQueues[queue] == nil, !consumers.values.contains(queue) else { return }
        if renewsConsumers {
            consumerLimits[queue] = nil
            return consumerLimitsMayFallShort()
        }
        try useChannelWidePrefetch()
        try consumeJobs(from: queue)
    }

    /// Pauses or resumes taking jobs from `queue`; whether that changed anything. Pausing stops its consumer.
    func setPaused(_ paused: Bool, queue: String) throws -> Bool {
        guard paused != pausedQueues.contains(queue) else { return false }
        if paused {
            pausedQueues.insert(queue)
            try cancelConsumers(of: queue)
            consumerLimits[queue] = nil
        } else {
            pausedQueues.remove(queue)
            try startConsumer(of: queue)
        }
        return true
    }

    /// The broker cancelled consumer `tag`: its queue is out of reach (its node went down, or it was deleted), and
    /// is looked for again. Returns the queue; `nil` for a tag that is no job consumer.
    func consumerCancelled(_ tag: String) -> String? {
        guard let queue = consumers[tag] else { return nil }
        logger.warning(
            """
            the broker cancelled the consumer of a job queue (its cluster node is down, or it was deleted); looking \
            for it again
            """,
            metadata: ["queue": "\(queue)"])
        consumers[tag] = nil
        retiredConsumers[tag] = queue
        consumerLimits[queue] = nil
        unreachableQueues[queue] = .now + Self.unreachableQueueRetry
        return queue
    }

    /// Looks for the unreachable job queues whose time has come, and consumes those it finds again.
    func retryUnreachableQueues() throws {
        guard !unreachableQueues.isEmpty, isConsuming, !lifecycle.isStopping else { return }
        let now = ContinuousClock.now
        for (queue, due) in unreachableQueues where due <= now {
            guard try declareJobQueue(queue) != nil else { continue }
            logger.info("job queue reachable again", metadata: ["queue": "\(queue)"])
            if !pausedQueues.contains(queue) { try startConsumer(of: queue) }
        }
    }

    // MARK: - Prefetch

    /// Sets the prefetch to the base, plus one for each of `heldJobs`, the jobs held without running.
    func updatePrefetch(heldJobs: Int) throws {
        let prefetch = UInt16(min(basePrefetch + heldJobs, 65_535))
        guard prefetch != currentPrefetch, isConsuming else { return }
        if renewsConsumers {
            currentPrefetch = prefetch
            return consumerLimitsMayFallShort()
        }
        try useChannelWidePrefetch()
        try link.connection.qos(prefetchCount: prefetch, global: true, channel: BrokerLink.Channel.jobs)
        currentPrefetch = prefetch
    }

    /// The local queues' total width changed to `totalWidth` (`warren resize`): the prefetch follows it, unless
    /// the configuration set its own. Returns whether it follows.
    func widthsChanged(to totalWidth: Int) -> Bool {
        guard configuration.prefetch == nil else { return false }
        basePrefetch = min(totalWidth, 65_535)
        consumerLimitsMayFallShort()
        return true
    }

    /// Moves the prefetch limit from the job consumers to the jobs channel for the rest of the connection, before
    /// a consumer starts again or the limit changes: the channel's limit changes live and counts every
    /// unacknowledged delivery, whichever consumer brought it, so restarting a consumer cannot exceed it.
    private func useChannelWidePrefetch() throws {
        guard prefetchPerConsumer, !renewsConsumers else { return }
        prefetchPerConsumer = false
        // In this order: RabbitMQ lifts the channel's limit whenever it sets consumers' own.
        try link.connection.qos(prefetchCount: 0, global: false, channel: BrokerLink.Channel.jobs)
        try link.connection.qos(prefetchCount: currentPrefetch, global: true, channel: BrokerLink.Channel.jobs)
        for queue in Set(consumers.values) {
            try cancelConsumers(of: queue)
            try consumeJobs(from: queue)
        }
    }

    /// Warns when a prefetch given explicitly (`--prefetch`) is below the local queues' total width: no more jobs
    /// than the prefetch run at once, however wide the queues.
    func warnIfBelow(totalWidth: Int) {
        guard let prefetch = configuration.prefetch, prefetch < totalWidth else { return }
        logger.warning(
            "the prefetch is below the local queues' total width: at most \(prefetch) jobs run at once",
            metadata: ["prefetch": "\(prefetch)", "totalWidth": "\(totalWidth)"])
    }

    // MARK: - Streams

    /// Whether `delivery`, which carries an `x-stream-offset` header, came from a stream: the worker then stops
    /// consuming it, and the job is not run here (the stream keeps it). A stream hands every job to every worker.
    /// The header could also be a producer's own: the queue is asked first, and a queue it cannot tell is only
    /// warned of.
    func refusesStream(_ delivery: Delivery, acknowledge: (UInt64) -> Void) throws -> Bool {
        let queue = queue(of: delivery)
        if streamQueues.contains(queue) {
            acknowledge(delivery.deliveryTag)  // one delivered before the consumer went
            return true
        }
        guard !streamSuspects.contains(queue) else { return false }
        guard try Topology.isStream(queue, on: link.connection) else {
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
        acknowledge(delivery.deliveryTag)
        try cancelConsumers(of: queue)
        return true
    }
}
