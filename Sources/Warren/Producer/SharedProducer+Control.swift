/// Control commands and broker questions, each run on the producer's thread in turn.
extension SharedProducer {
    /// Cancels every job enqueued so far, of broker queue `queue` or of all queues; jobs enqueued later run.
    public func cancelAll(queue: String? = nil) async throws {
        try await withProducer { try $0.cancelAll(queue: queue) }
    }

    /// Stops the workers named, or all, from taking jobs from `queue`, or from every queue they consume. Jobs that
    /// have not started go back to the broker; executing ones go on.
    public func pause(worker: String? = nil, queue: String? = nil) async throws {
        try await withProducer { try $0.pause(worker: worker, queue: queue) }
    }

    /// Resumes what ``pause(worker:queue:)`` paused.
    public func resume(worker: String? = nil, queue: String? = nil) async throws {
        try await withProducer { try $0.resume(worker: worker, queue: queue) }
    }

    /// Sets the width of local queue `localQueue` on the workers named, or on all of them that have it.
    public func resize(localQueue: String, width: Int, worker: String? = nil) async throws {
        try await withProducer { try $0.resize(localQueue: localQueue, width: width, worker: worker) }
    }

    /// The status of every live worker that answers within `timeout`.
    /// - Parameters:
    ///   - timeout: How long to wait for answers.
    ///   - jobs: With a number, each worker also lists up to that many of the jobs it holds.
    public func workerStatuses(timeout: Duration = .seconds(2), jobs: Int? = nil) async throws -> [WorkerStatus] {
        try await withProducer { try $0.workerStatuses(timeout: timeout, jobs: jobs) }
    }

    /// What the broker holds for job queue `queue`: jobs waiting, jobs delayed, consumers; `nil` if there is none.
    public func jobQueueStatus(_ queue: String) async throws -> JobQueueStatus? {
        try await withProducer { try $0.jobQueueStatus(queue) }
    }

    /// How many dead letters `warren.dead` holds, or `nil` when there is no such queue yet.
    public func deadLetterCount() async throws -> Int? {
        try await withProducer { try $0.deadLetterCount() }
    }

    /// Frees the unique lock of `key` by hand; the id of the job that held it, or `nil` when it was free.
    @discardableResult
    public func unlock(key: String) async throws -> String? {
        try await withProducer { try $0.unlock(key: key) }
    }
}
