import AMQP
import Foundation

/// Jobs that wait for other jobs.
///
/// A job whose dependencies have not all ended is *parked*: held by the worker, not yet in a local queue. Each
/// parked job raises the channel's prefetch by one (on quorum queues, it stops counting against its queue's
/// consumer: ``renewConsumersIfDue()``), so waiting jobs never starve the worker of the jobs they wait for (the
/// Celery fix for ETA tasks); past ``Worker/Configuration/maxParkedJobs`` a job is parked through the
/// broker instead (a delay queue sends it back a few seconds later). Which jobs ended, wherever they ran, the
/// worker learns from the `warren.results` stream, which it starts reading (a day back) when it first parks a job;
/// from then on it also remembers the jobs it ends itself. A cancelled or failed dependency counts as ended, unless
/// the job asks for success.
extension WorkerSession {
    /// What to do with a job that has dependencies, before it is queued: `true` when it was parked or settled.
    func holdForDependencies(_ job: InFlightJob) throws -> Bool {
        let dependencies = job.descriptor.dependencies ?? []
        guard !dependencies.isEmpty else { return false }
        if dependencies.contains(job.descriptor.id) {
            try rejectCycle([job], detail: "job \(job.descriptor.id) depends on itself")
            return true
        }
        let pending = Set(dependencies.filter { finishedJobs[$0] == nil })
        guard !pending.isEmpty else { return try releaseIfDependenciesAllow(job) }
        guard parked.count < configuration.maxParkedJobs else {
            job.operation.job.debug("parking through the broker: too many parked jobs")
            try delay(job.delivery, from: job.queue, milliseconds: 5_000, attempt: job.attempt)
            return true
        }
        inFlight[job.descriptor.id] = job
        parked[job.descriptor.id] = pending
        job.operation.job.debug("parked until its dependencies end", metadata: ["waitingOn": "\(pending.sorted())"])
        if let cycle = parkedCycle(from: job.descriptor.id) {
            let members = Set(cycle).compactMap { inFlight[$0] }
            try rejectCycle(members, detail: "dependency cycle: \(cycle.joined(separator: " -> "))")
            return true
        }
        try readResultsStream()
        try updatePrefetch()
        return true
    }

    /// A job ended (here, or anywhere as the stream tells): release the jobs that waited only for it. Remembered
    /// only once dependencies are in play (the stream is read): until then no job waits, and a job that arrives
    /// later with dependencies learns of earlier ends from the stream.
    func dependencyEnded(_ jobID: String, status: JobStatus) throws {
        guard readsResultsStream else { return }
        finishedJobs.record(jobID, status)
        var released: [InFlightJob] = []
        for (id, pending) in parked where pending.contains(jobID) {
            var rest = pending
            rest.remove(jobID)
            parked[id] = rest.isEmpty ? nil : rest
            if rest.isEmpty, let job = inFlight[id] { released.append(job) }
        }
        guard !released.isEmpty else { return }
        for job in released { _ = try releaseIfDependenciesAllow(job) }
        try updatePrefetch()
    }

    /// Queues `job`, or ends it `cancelled` when it requires success and a dependency did not succeed.
    @discardableResult
    private func releaseIfDependenciesAllow(_ job: InFlightJob) throws -> Bool {
        let failed = (job.descriptor.dependencies ?? []).filter { finishedJobs[$0].map { $0 != .succeeded } ?? false }
        if job.descriptor.requireSuccess == true, let first = failed.first {
            inFlight[job.descriptor.id] = job
            job.operation.cancel(
                Cancellation(
                    reason: "dependency",
                    message: "dependency \(first) ended \(finishedJobs[first]!.rawValue), and the job requires success"))
            return true
        }
        inFlight[job.descriptor.id] = job
        queueOperation(of: job)
        return true
    }

    /// How far back the results stream is read for dependencies.
    static let dependencyHorizon: TimeInterval = 86_400

    /// Starts reading the results stream, from ``dependencyHorizon`` ago, the first time a job is parked.
    func readResultsStream() throws {
        guard !readsResultsStream else { return }
        try connection.openChannel(Self.resultsChannel)
        try connection.qos(prefetchCount: 1000, channel: Self.resultsChannel)
        let since = UInt64(Date().timeIntervalSince1970 - Self.dependencyHorizon)
        try connection.consume(
            Topology.resultsStream, arguments: ["x-stream-offset": .timestamp(since)], channel: Self.resultsChannel)
        readsResultsStream = true
    }

    /// A message of the `warren.results` stream: a batch of results, or one result.
    func handleStoredResult(_ delivery: Delivery) throws {
        try connection.ack(delivery.deliveryTag, multiple: true, channel: Self.resultsChannel)
        for case .success(let result) in ResultBatch.results(in: delivery.body, type: delivery.properties.type) {
            try dependencyEnded(result.jobID, status: result.status)
        }
    }

    /// Prefetch: the configured one, plus one for each parked job and each held one (``hold(_:_:_:_:)``).
    func updatePrefetch() throws {
        let prefetch = UInt16(min(configuration.effectivePrefetch + parked.count + heldJobs.count, 65_535))
        guard prefetch != currentPrefetch, isConsuming else { return }
        if renewsConsumers {
            currentPrefetch = prefetch
            return consumerLimitsMayFallShort()
        }
        try useChannelWidePrefetch()
        try connection.qos(prefetchCount: prefetch, global: true, channel: Self.jobsChannel)
        currentPrefetch = prefetch
    }

    /// A cycle through `start` among the jobs parked here, if there is one.
    private func parkedCycle(from start: String) -> [String]? {
        var path: [String] = []
        var visited: Set<String> = []
        func visit(_ id: String) -> [String]? {
            if id == start && !path.isEmpty { return path + [start] }
            guard visited.insert(id).inserted, let waitingOn = parked[id] else { return nil }
            path.append(id)
            for next in waitingOn.sorted() { if let cycle = visit(next) { return cycle } }
            path.removeLast()
            return nil
        }
        return visit(start)
    }

    /// Dead-letters every job of a dependency cycle, each with a `failed` result that names the cycle.
    /// All of them leave the parked jobs first: the result of one releases the jobs that waited for it, and a member
    /// still parked would be queued and run after its own rejection.
    private func rejectCycle(_ jobs: [InFlightJob], detail: String) throws {
        for job in jobs {
            parked[job.descriptor.id] = nil
            inFlight[job.descriptor.id] = nil
        }
        for job in jobs {
            let error = JobError(code: "dependencyCycle", message: detail)
            try reject(job.delivery, error: error, receivedAt: job.receivedAt, descriptor: job.descriptor)
        }
        try updatePrefetch()
    }
}
