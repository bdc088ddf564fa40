import Logging

/// Where jobs go that do not end on this worker's path: the dead letters, the delay queues, and, while the queue
/// they must go to is out of reach, a hold in the worker.
///
/// Thread safety: confined to the worker's broker thread.
struct Detours {
    let held: HeldDeliveries
    let deadLetters: DeadLettering
    let delays: DelayQueues

    init(
        link: BrokerLink, settlements: Settlements, locks: UniqueLockReleaser, consumers: ConsumerControl,
        metrics: WorkerMetrics, configuration: Worker.Configuration, logger: Logger
    ) {
        held = HeldDeliveries(logger: logger)
        deadLetters = DeadLettering(
            link: link, settlements: settlements, locks: locks, held: held, consumers: consumers, metrics: metrics,
            quorumQueues: configuration.quorumQueues)
        delays = DelayQueues(link: link, settlements: settlements, held: held, logger: logger)
    }

    /// A new connection: the dead letters are declared; the jobs held died with the last one.
    func connected() throws {
        held.connectionLost()
        try deadLetters.connected()
    }

    /// Runs the held jobs' work again, once it is due; the dead-letter queue is looked for again first.
    func retryHeldJobs() throws {
        _ = try held.retryIfDue(beforeRetry: deadLetters.lookAgain)
    }
}
