import AMQP
import Foundation

/// `warren status`: what a worker reports of itself, and of the jobs it holds.
extension WorkerSession {
    /// This worker's answer to `warren status`, listing up to `limit` of the jobs it holds if set.
    func status(listingJobs limit: Int? = nil) -> WorkerStatus {
        let process = ProcessInfo.processInfo
        let queues = localQueues.values.sorted { $0.name < $1.name }.map { local in
            let jobs = inFlight.values.filter { $0.localQueue == local.name }
            let started = jobs.filter { $0.operation.hasStarted }
            return WorkerStatus.LocalQueueStatus(
                name: local.name, width: local.width, executing: started.filter { !$0.operation.isFinished }.count,
                waiting: jobs.count - started.count)
        }
        var status = WorkerStatus(
            version: WireCoding.version, workerID: configuration.workerID, host: process.hostName,
            pid: process.processIdentifier, startedAt: startedAt, uptimeSeconds: -startedAt.timeIntervalSinceNow,
            queues: configuration.queues, pausedQueues: pausedQueues.sorted(), prefetch: Int(currentPrefetch),
            localQueues: queues, totals: totals, recycling: recycling?.rawValue)
        if stopDeadline != nil { status.stopping = true }
        if let limit {
            let jobs = jobListing()
            var listed: [WorkerStatus.Job] = []
            var bytes = 0
            for job in jobs.prefix(max(limit, 0)) {
                // What a job's key or progress message may hold is bounded by the job messages the worker takes,
                // not by what the broker takes in one reply: the list stops at a budget.
                bytes += (try? WireCoding.encoder.encode(job).count) ?? statusJobBytes
                guard bytes <= statusJobBytes else { break }
                listed.append(job)
            }
            status.jobs = listed
            status.moreJobs = jobs.count - listed.count
        }
        return status
    }

    /// Publishes this worker's status to `replyTo`, on a channel of its own: a reply larger than the broker takes
    /// (`max_message_size`, before the worker learnt it) closes that channel only, and the worker answers again
    /// within the limit it then knows (``statusChannelClosed(_:)``).
    func answerStatus(replyTo: String, listingJobs limit: Int?) throws {
        try openStatusChannel()
        lastStatusRequest = (replyTo, limit)
        try connection.publish(
            Array(try WireCoding.encoder.encode(status(listingJobs: limit))), exchange: "", routingKey: replyTo,
            properties: MessageProperties(contentType: WireCoding.contentType, type: "warren.status"),
            channel: Self.statusChannel)
    }

    /// Opens ``statusChannel`` unless it is open. A connection opens it as it is set up, before its first publish:
    /// a broker under a memory or disk alarm stops reading a connection once it publishes, and a `channel.open` then
    /// would wait for its time limit (a request replayed from the control stream at start-up, under an alarm, held
    /// a worker's start and its `SIGTERM` for 30 s).
    func openStatusChannel() throws {
        guard !statusChannelOpen else { return }
        try connection.openChannel(Self.statusChannel)
        statusChannelOpen = true
    }

    /// The broker closed the status channel: for a reply larger than it takes, the worker learns its limit and
    /// answers the last request again; anything else ends the connection, as on any other channel.
    func statusChannelClosed(_ error: AMQPError) throws {
        statusChannelOpen = false
        let known = brokerMaxMessageBytes
        learnBrokerMaxMessageSize(from: error)
        guard brokerMaxMessageBytes < known, let (replyTo, limit) = lastStatusRequest else { throw error }
        try answerStatus(replyTo: replyTo, listingJobs: limit)
    }

    /// The most bytes of jobs a status reply lists: 4 MiB, or half the broker's largest message when that is less
    /// (``brokerMaxMessageBytes``), so that a request for many jobs with long keys never costs the worker its
    /// connection.
    var statusJobBytes: Int { min(4 << 20, brokerMaxMessageBytes / 2) }

    /// The jobs this worker holds, as `warren status --jobs` lists them: executing ones first, longest running
    /// first, then the others by priority and arrival.
    private func jobListing() -> [WorkerStatus.Job] {
        let now = ContinuousClock.now
        let jobs = inFlight.values.map { job -> (WorkerStatus.Job, Date) in
            let startedAt = job.operation.startedAt
            let held = WorkerStatus.Job(
                id: job.descriptor.id, type: job.descriptor.type, state: startedAt != nil ? .executing : state(of: job),
                queue: job.queue, localQueue: job.localQueue, priority: job.descriptor.priority, key: job.descriptor.key,
                sequence: job.descriptor.sequence, attempt: job.attempt,
                heldSeconds: -job.receivedAt.timeIntervalSinceNow,
                executingSeconds: startedAt.map { (now - $0) / .seconds(1) }, progress: job.progress?.fraction,
                progressMessage: job.progress?.message, timeLimitSeconds: job.timeLimit.map { $0 / .seconds(1) },
                cancelled: startedAt == nil ? nil : job.operation.job.cancellation?.reason,
                unique: job.descriptor.unique == true ? true : nil,
                waitingOn: parked[job.descriptor.id].map { Array($0.sorted().prefix(WorkerStatus.Job.maxWaitingOn)) })
            return (held, job.receivedAt)
        }
        return (jobs + heldJobListing()).sorted { a, b in
            switch (a.0.executingSeconds, b.0.executingSeconds) {
            case (let x?, let y?): return x > y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.0.priority != b.0.priority ? a.0.priority > b.0.priority : a.1 < b.1
            }
        }.map(\.0)
    }

    /// The jobs held until a queue they must go to can be reached (``hold(_:_:_:_:)``), with when they were first held.
    private func heldJobListing() -> [(WorkerStatus.Job, Date)] {
        heldJobs.compactMap { held -> (WorkerStatus.Job, Date)? in
            let delivery = held.delivery
            guard
                let descriptor = try? jobDecoder.decode(
                    delivery.body, contentType: delivery.properties.contentType,
                    contentEncoding: delivery.properties.contentEncoding)
            else { return nil }
            let job = WorkerStatus.Job(
                id: descriptor.id, type: descriptor.type, state: .held, queue: queue(of: delivery),
                localQueue: worker.registry[descriptor.type]?.localQueue ?? "-", priority: descriptor.priority,
                key: descriptor.key, sequence: descriptor.sequence, attempt: Self.attempt(of: delivery),
                heldSeconds: -held.heldAt.timeIntervalSinceNow, executingSeconds: nil, progress: nil,
                progressMessage: nil, timeLimitSeconds: nil, cancelled: nil,
                unique: descriptor.unique == true ? true : nil)
            return (job, held.heldAt)
        }
    }

    /// Where a job that has not started is: in its local queue, or what it waits for in the worker.
    func state(of job: InFlightJob) -> WorkerStatus.Job.State {
        if parked[job.descriptor.id] != nil { return .waitingForDependencies }
        if job.isQueued { return .waiting }
        return job.runsAlone ? .waitingToRunAlone : .waitingForTurn
    }

    /// Reports how many jobs the worker holds outside its local queues, by what they wait for
    /// (``WorkerMetrics/jobsWaitingInWorker(_:)``): the local queues' own gauges cannot see them. At most once a
    /// second, since it may pass over every job held; a turn that comes sooner has the loop wake up for it then.
    func sampleJobsWaitingInWorker() {
        let now = ContinuousClock.now
        if let last = jobsWaitingSampledAt, now - last < .seconds(1) {
            jobsWaitingResampleAt = last + .seconds(1)
            return
        }
        jobsWaitingSampledAt = now
        jobsWaitingResampleAt = nil
        var counts: [WorkerStatus.Job.State: Int] = [
            .waitingForDependencies: parked.count, .waitingForTurn: 0, .waitingToRunAlone: 0,
        ]
        if !throttles.isEmpty || !fleetThrottles.isEmpty || !aloneJobs.isEmpty {
            for job in inFlight.values where !job.isQueued && parked[job.descriptor.id] == nil {
                counts[state(of: job), default: 0] += 1
            }
        }
        metrics.jobsWaitingInWorker(counts)
    }
}
