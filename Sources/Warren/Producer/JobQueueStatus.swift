/// What the broker holds for one job queue: the jobs no worker has taken yet, and who takes them.
///
/// Jobs delivered to workers and not acknowledged yet are in no figure here: each worker reports its own
/// (``WorkerStatus``).
///
/// Thread safety: immutable.
public struct JobQueueStatus: Codable, Sendable, Equatable {
    /// The broker queue.
    public var queue: String
    /// Jobs ready for a worker.
    public var waiting: Int
    /// Jobs held in the queue's delay queues until they come back to it: retries waiting out their backoff, and
    /// jobs waiting for dependencies that run on other workers.
    public var delayed: Int
    /// Consumers of the queue: one per worker taking jobs from it (a paused worker takes none).
    public var consumers: Int

    public init(queue: String, waiting: Int, delayed: Int, consumers: Int) {
        self.queue = queue
        self.waiting = waiting
        self.delayed = delayed
        self.consumers = consumers
    }
}
