import AMQP
import Foundation

/// What a worker reports of itself and of the jobs it holds: the replies to `warren status`, the jobs' progress,
/// and the gauge of the jobs that wait in the worker outside its local queues.
///
/// Replies go out on a channel of their own: a reply larger than the broker takes (`max_message_size`, before the
/// worker learnt it) closes that channel only, and the worker answers again within the limit it then knows.
/// Thread safety: confined to the worker's broker thread.
final class StatusReporter: WakesTheLoop {
    /// What a status reply is made of, beside the jobs in flight: the other components' state.
    struct Sources {
        let localQueues: LocalQueues
        let consumers: ConsumerControl
        let lifecycle: Lifecycle
        let held: HeldDeliveries
        let dependencies: DependencyGate
    }

    private let link: BrokerLink
    private let jobs: InFlightJobs
    private let sources: Sources
    private let configuration: Worker.Configuration
    private let registry: OperationRegistry
    private let metrics: WorkerMetrics
    private let startedAt = Date()
    /// Jobs ended, by result status: an array, so that counting a job hashes nothing.
    private var ended = [Int](repeating: 0, count: JobStatus.allCases.count)
    /// Whether the status channel is open: it is from the start of each connection, and again after the broker
    /// closed it for a reply larger than it takes.
    private var channelOpen = false
    /// The reply queue and job limit of the last request answered on this connection.
    private var lastRequest: (replyTo: String, jobs: Int?)?
    /// When the gauge of jobs waiting in the worker was last set, and when it is due again after a turn that
    /// skipped it.
    private var sampledAt: ContinuousClock.Instant?
    private var resampleAt: ContinuousClock.Instant?

    init(
        link: BrokerLink, jobs: InFlightJobs, sources: Sources, configuration: Worker.Configuration,
        registry: OperationRegistry, metrics: WorkerMetrics
    ) {
        self.link = link
        self.jobs = jobs
        self.sources = sources
        self.configuration = configuration
        self.registry = registry
        self.metrics = metrics
    }

    /// When the gauge of waiting jobs is due again.
    var nextWake: ContinuousClock.Instant? { resampleAt }

    /// Counts a result published, by status.
    func count(_ result: JobResult) {
        ended[Self.index(of: result.status)] += 1
    }

    /// Jobs ended, by the raw value of their result status; statuses no job ended with are left out.
    private var totals: [String: Int] {
        var totals: [String: Int] = [:]
        for status in JobStatus.allCases where ended[Self.index(of: status)] > 0 {
            totals[status.rawValue] = ended[Self.index(of: status)]
        }
        return totals
    }

    private static func index(of status: JobStatus) -> Int {
        switch status {
        case .succeeded: 0
        case .failed: 1
        case .cancelled: 2
        }
    }

    // MARK: - Replies

    /// Opens the status channel of a new connection, as it is set up, before its first publish: a broker under a
    /// memory or disk alarm stops reading a connection once it publishes, and a `channel.open` then would wait for
    /// its time limit.
    func connected() throws {
        channelOpen = false
        lastRequest = nil
        let route = ChannelRoute()
        route.onClose = { [unowned self] in try channelClosed($0) }
        link.pump.route(BrokerLink.Channel.status, to: route)
        try openChannel()
    }

    private func openChannel() throws {
        guard !channelOpen else { return }
        try link.connection.openChannel(BrokerLink.Channel.status)
        channelOpen = true
    }

    /// Publishes this worker's status to `replyTo`, listing up to `limit` of the jobs it holds if set.
    func answer(replyTo: String, listingJobs limit: Int?) throws {
        try openChannel()
        lastRequest = (replyTo, limit)
        try link.connection.publish(
            Array(try WireCoding.encoder.encode(status(listingJobs: limit))), exchange: "", routingKey: replyTo,
            properties: MessageProperties(contentType: WireCoding.contentType, type: "warren.status"),
            channel: BrokerLink.Channel.status)
    }

    /// The broker closed the status channel: for a reply larger than it takes, the worker learns its limit and
    /// answers the last request again; anything else ends the connection, as on any other channel.
    func channelClosed(_ error: AMQPError) throws {
        channelOpen = false
        guard link.learnMaxMessageSize(from: error), let (replyTo, limit) = lastRequest else { throw error }
        try answer(replyTo: replyTo, listingJobs: limit)
    }

    /// The most bytes of jobs a status reply lists: 4 MiB, or half the broker's largest message when that is less,
    /// so that a request for many jobs with long keys never costs the worker its connection.
    private var jobBytes: Int { min(4 << 20, link.maxMessageBytes / 2) }

    /// This worker's answer to `warren status`, listing up to `limit` of the jobs it holds if set.
    func status(listingJobs limit: Int? = nil) -> WorkerStatus {
        let process = ProcessInfo.processInfo
        let queues = sources.localQueues.byName.values.sorted { $0.name < $1.name }.map { local in
            let held = jobs.all.filter { $0.localQueue == local.name }
            let started = held.filter { $0.operation.hasStarted }
            return WorkerStatus.LocalQueueStatus(
                name: local.name, width: local.width, executing: started.filter { !$0.operation.isFinished }.count,
                waiting: held.count - started.count)
        }
        var status = WorkerStatus(
            version: WireCoding.version, workerID: configuration.workerID, host: process.hostName,
            pid: process.processIdentifier, startedAt: startedAt, uptimeSeconds: -startedAt.timeIntervalSinceNow,
            queues: configuration.queues, pausedQueues: sources.consumers.pausedQueues.sorted(),
            prefetch: Int(sources.consumers.currentPrefetch), localQueues: queues, totals: totals,
            recycling: sources.lifecycle.recycling?.rawValue)
        if sources.lifecycle.isStopping { status.stopping = true }
        if let limit {
            let listing = jobListing()
            var listed: [WorkerStatus.Job] = []
            var bytes = 0
            for job in listing.prefix(max(limit, 0)) {
                // What a job's key or progress message may hold is bounded by the job messages the worker takes,
                // not by what the broker takes in one reply: the list stops at a budget.
                bytes += (try? WireCoding.encoder.encode(job).count) ?? jobBytes
                guard bytes <= jobBytes else { break }
                listed.append(job)
            }
            status.jobs = listed
            status.moreJobs = listing.count - listed.count
        }
        return status
    }

    /// The jobs this worker holds, as `warren status --jobs` lists them: executing ones first, longest running
    /// first, then the others by priority and arrival.
    private func jobListing() -> [WorkerStatus.Job] {
        let now = ContinuousClock.now
        let listed = jobs.all.map { job -> (WorkerStatus.Job, Date) in
            let startedAt = job.operation.startedAt
            let waitingOn = sources.dependencies.waitingOn(job.descriptor.id)
            let held = WorkerStatus.Job(
                id: job.descriptor.id, type: job.descriptor.type, state: startedAt != nil ? .executing : state(of: job),
                queue: job.queue, localQueue: job.localQueue, priority: job.descriptor.priority,
                key: job.descriptor.key,
                sequence: job.descriptor.sequence, attempt: job.attempt,
                heldSeconds: -job.receivedAt.timeIntervalSinceNow,
                executingSeconds: startedAt.map { (now - $0) / .seconds(1) }, progress: job.progress?.fraction,
                progressMessage: job.progress?.message, timeLimitSeconds: job.timeLimit.map { $0 / .seconds(1) },
                cancelled: startedAt == nil ? nil : job.operation.job.cancellation?.reason,
                unique: job.descriptor.unique == true ? true : nil,
                waitingOn: waitingOn.map { Array($0.sorted().prefix(WorkerStatus.Job.maxWaitingOn)) })
            return (held, job.receivedAt)
        }
        return (listed + heldJobListing()).sorted { a, b in
            switch (a.0.executingSeconds, b.0.executingSeconds) {
            case (let x?, let y?): return x > y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.0.priority != b.0.priority ? a.0.priority > b.0.priority : a.1 < b.1
            }
        }.map(\.0)
    }

    /// The jobs held until a queue they must go to can be reached, with when they were first held.
    private func heldJobListing() -> [(WorkerStatus.Job, Date)] {
        let decoder = JobDecoder(configuration: configuration)
        return sources.held.held.compactMap { held -> (WorkerStatus.Job, Date)? in
            let delivery = held.delivery
            guard
                let descriptor = try? decoder.decode(
                    delivery.body, contentType: delivery.properties.contentType,
                    contentEncoding: delivery.properties.contentEncoding)
            else { return nil }
            let job = WorkerStatus.Job(
                id: descriptor.id, type: descriptor.type, state: .held, queue: sources.consumers.queue(of: delivery),
                localQueue: registry[descriptor.type]?.localQueue ?? "-", priority: descriptor.priority,
                key: descriptor.key, sequence: descriptor.sequence, attempt: delivery.attempt,
                heldSeconds: -held.heldAt.timeIntervalSinceNow, executingSeconds: nil, progress: nil,
                progressMessage: nil, timeLimitSeconds: nil, cancelled: nil,
                unique: descriptor.unique == true ? true : nil)
            return (job, held.heldAt)
        }
    }

    /// Where a job that has not started is: in its local queue, or what it waits for in the worker.
    private func state(of job: InFlightJob) -> WorkerStatus.Job.State {
        if job.isParked { return .waitingForDependencies }
        if job.isQueued { return .waiting }
        return job.runsAlone ? .waitingToRunAlone : .waitingForTurn
    }

    // MARK: - Progress

    /// Publishes a progress report of `job` to the progress exchange, and to the job's reply queue if it names one:
    /// transient, best effort, no settlement waits for it. Kept for `warren status --jobs`.
    func publishProgress(of job: InFlightJob, fraction: Double, message: String?) throws {
        job.progress = (fraction, message)
        let jobID = job.descriptor.id
        let progress = ProgressMessage(
            jobID: jobID, fraction: fraction, message: message, workerID: configuration.workerID)
        let body = Array(try WireCoding.encoder.encode(progress))
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: false, correlationID: jobID,
            type: ProgressMessage.messageType)
        _ = try link.publish(body, exchange: Topology.progressExchange, routingKey: jobID, properties: properties)
        if let replyTo = job.delivery.replyQueue {
            _ = try link.publish(body, exchange: "", routingKey: replyTo, properties: properties)
        }
    }

    // MARK: - The gauge of jobs waiting in the worker

    /// Reports how many jobs the worker holds outside its local queues, by what they wait for
    /// (``WorkerMetrics/jobsWaitingInWorker(_:)``): the local queues' own gauges cannot see them. At most once a
    /// second, since it may pass over every job held; a turn that comes sooner has the loop wake up for it then.
    /// - Parameter waitForTurns: Whether jobs may wait for a rate limit's turn or to run alone.
    func sampleJobsWaitingInWorker(waitForTurns: Bool) {
        let now = ContinuousClock.now
        if let last = sampledAt, now - last < .seconds(1) {
            resampleAt = last + .seconds(1)
            return
        }
        sampledAt = now
        resampleAt = nil
        var counts: [WorkerStatus.Job.State: Int] = [
            .waitingForDependencies: sources.dependencies.parkedCount, .waitingForTurn: 0, .waitingToRunAlone: 0,
        ]
        if waitForTurns {
            for job in jobs.all where !job.isQueued && !job.isParked { counts[state(of: job), default: 0] += 1 }
        }
        metrics.jobsWaitingInWorker(counts)
    }
}
