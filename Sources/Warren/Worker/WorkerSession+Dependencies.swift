import AMQP
import Foundation

/// Jobs that wait for other jobs, and receive what they ended with.
///
/// A job with dependencies is *parked*: held by the worker, not yet in a local queue, until it holds the result of
/// every one of them (``JobContext/dependencyResults``). Each parked job raises the channel's prefetch by one (on
/// quorum queues, it stops counting against its queue's consumer: ``renewConsumersIfDue()``), so waiting jobs
/// never starve the worker of the jobs they wait for (the Celery fix for ETA tasks); past
/// ``Worker/Configuration/maxParkedJobs`` a job is parked through the broker instead (a delay queue sends it back a
/// few seconds later), unless its dependencies all ended: it is parked only until their results are read. Which
/// jobs ended, wherever they ran, and what they ended with, the worker learns from the
/// `warren.results` stream, which it starts reading (a day back) when it first parks a job; from then on it also
/// remembers the jobs it ends itself, and where the stream holds each result. A dependency that ended before its
/// dependent arrived has its result read again from that offset (``ResultFetches``). A cancelled or failed
/// dependency counts as ended, unless the job asks for success.
extension WorkerSession {
    /// What to do with a job that has dependencies, before it is queued: `true` when it was parked or settled.
    func holdForDependencies(_ job: InFlightJob) throws -> Bool {
        let dependencies = job.descriptor.dependencies ?? []
        guard !dependencies.isEmpty else { return false }
        if dependencies.contains(job.descriptor.id) {
            try rejectCycle([job], detail: "job \(job.descriptor.id) depends on itself")
            return true
        }
        // Jobs learn of their dependencies' ends from the stream, also those that go round through the broker.
        try readResultsStream()
        // A job that closes a cycle with jobs parked here is refused, whether or not there is room to park it.
        parked[job.descriptor.id] = Set(dependencies)
        if let cycle = parkedCycle(from: job.descriptor.id) {
            inFlight[job.descriptor.id] = job
            let members = Set(cycle).compactMap { inFlight[$0] }
            try rejectCycle(members, detail: "dependency cycle: \(cycle.joined(separator: " -> "))")
            return true
        }
        // One whose dependencies all ended waits only for their results to be read: parked here whatever the
        // count, or the jobs parked for it could wait for it for good. One past its deadline is held here too, for
        // the moment it takes to end it cancelled (enforceDeadlines), not sent round the broker first.
        let ready = dependencies.allSatisfy { finishedJobs[$0] != nil }
        let expired = job.descriptor.deadline.map { $0 <= Date() } ?? false
        guard parked.count <= configuration.maxParkedJobs || ready || expired else {
            parked[job.descriptor.id] = nil
            job.operation.job.debug(
                "parking through the broker: as many jobs are parked here as the worker may hold",
                metadata: ["maxParkedJobs": "\(configuration.maxParkedJobs)"])
            try delay(job.delivery, from: job.queue, milliseconds: Self.parkedRoundTrip, attempt: job.attempt)
            return true
        }
        inFlight[job.descriptor.id] = job
        try updatePrefetch()
        holdFinishes(of: dependencies)
        let ended = Set(dependencies).filter { finishedJobs[$0] != nil }
        job.operation.job.debug(
            "parked until its dependencies end and their results are read",
            metadata: [
                "waitingOn": .array(Set(dependencies).subtracting(ended).sorted().map { "\($0)" }),
                "ended": .array(ended.sorted().map { "\($0)" }),
            ])
        // A dependency that ended here without its offset has its result on the way to the stream, and gathered
        // from there.
        for dependency in ended.sorted() where !resultsCatchUp.isHolding(dependency) {
            guard let offset = finishedJobs[dependency]?.offset else { continue }
            job.operation.job.debug(
                "reading a dependency's result from the results stream",
                metadata: ["dependency": "\(dependency)", "offset": "\(offset)"])
            try fetchResult(of: dependency, at: offset)
        }
        return true
    }

    /// How long a job parked through the broker stays away, in milliseconds: a delay queue's own length (4 s), so
    /// that it comes back when it expires, never behind a longer wait (RabbitMQ expires messages at a queue's head).
    static let parkedRoundTrip = 4_000

    /// How long a job stays parked here before it goes round through the broker (and comes back to park again):
    /// RabbitMQ closes the channel of a delivery held unacknowledged past its `consumer_timeout` (30 minutes by
    /// default, checked about once a minute), and every job the worker holds would go back to the broker with it,
    /// executing ones to run again elsewhere.
    static let parkedLifetime: TimeInterval = 600

    /// Sends jobs parked for ``parkedLifetime`` round through the broker, as a full parking does; looks every 10 s.
    func sendRoundLongParkedJobs() throws {
        guard !parked.isEmpty, ContinuousClock.now >= longParkedCheckAt else { return }
        longParkedCheckAt = .now + .seconds(10)
        let parkedBefore = Date().addingTimeInterval(-Self.parkedLifetime)
        let long = parked.keys.compactMap { inFlight[$0] }.filter { $0.receivedAt < parkedBefore }
        guard !long.isEmpty else { return }
        for job in long {
            parked[job.descriptor.id] = nil
            inFlight[job.descriptor.id] = nil
            job.operation.job.debug(
                "parked for 10 minutes: going round through the broker, before its consumer_timeout takes the delivery")
            try delay(job.delivery, from: job.queue, milliseconds: Self.parkedRoundTrip, attempt: job.attempt)
        }
        try updatePrefetch()
    }

    /// Holds the finish of the operations of `dependencies` in flight here (``JobOperation/holdFinish()``), until
    /// their end is handled and the jobs parked on them are in their local queues: a local queue then starts them in
    /// priority order beside the jobs that waited there, where it would otherwise start the next of those as the
    /// dependency finished, before the broker thread released its dependents (the priority inversion an
    /// `OperationQueue` never has).
    private func holdFinishes(of dependencies: [String]) {
        for dependency in dependencies where heldFinishes[dependency] == nil {
            guard let operation = inFlight[dependency]?.operation, !operation.isFinished else { continue }
            operation.holdFinish()
            heldFinishes[dependency] = operation
        }
    }

    /// Lets the operation of job `jobID` finish, if its finish was held, now that its end was handled.
    func releaseFinish(of jobID: String) {
        heldFinishes.removeValue(forKey: jobID)?.releaseFinish()
    }

    /// A job ended (here, or anywhere as the stream tells, which then tells where it holds the result): hand its
    /// result to the jobs that wait for it. Remembered only once dependencies are in play (the stream is read):
    /// until then no job waits, and a job that arrives later with dependencies learns of earlier ends from the
    /// stream.
    func dependencyEnded(_ result: JobResult, offset: UInt64?) throws {
        guard readsResultsStream, finishedJobs.record(result, offset: offset) else { return }
        if offset != nil, resultsCatchUp.holds(result) { return }
        try resolved(result.jobID, result: result)
    }

    /// The stream was read up to where it ended when the reading started: the failures read meanwhile that no rerun
    /// superseded go to the jobs that wait for them.
    func caughtUpWithResults() throws {
        for result in resultsCatchUp.finish() { try resolved(result.jobID, result: result) }
    }

    /// Hands the parked jobs waiting for `jobID` its `result` (none when it cannot be read), and queues those that
    /// wait for nothing more.
    private func resolved(_ jobID: String, result: JobResult?) throws {
        var released: [InFlightJob] = []
        for (id, pending) in parked where pending.contains(jobID) {
            guard let job = inFlight[id] else {
                parked[id] = nil
                continue
            }
            if let result { job.dependencyResults[jobID] = result }
            var rest = pending
            rest.remove(jobID)
            parked[id] = rest.isEmpty ? nil : rest
            if rest.isEmpty { released.append(job) }
        }
        guard !released.isEmpty else { return }
        for job in released.sorted(by: { $0.receivedAt < $1.receivedAt }) { try release(job) }
        try updatePrefetch()
    }

    /// Queues `job` with its dependencies' results, or ends it `cancelled` when it requires success and a
    /// dependency did not succeed.
    private func release(_ job: InFlightJob) throws {
        let results = job.dependencyResults
        job.dependencyResults = [:]
        job.operation.job.receiveDependencyResults(results)
        let statuses = (job.descriptor.dependencies ?? []).compactMap { id in
            (results[id]?.status ?? finishedJobs[id]?.status).map { (id, $0) }
        }
        if job.descriptor.requireSuccess == true, let (id, status) = statuses.first(where: { $0.1 != .succeeded }) {
            job.operation.cancel(
                Cancellation(
                    reason: "dependency",
                    message: "dependency \(id) ended \(status.rawValue), and the job requires success"))
            return
        }
        try take(job)
    }

    /// Reads the stream message at `offset` for `dependency`'s result, unless it is being read or waits to be.
    private func fetchResult(of dependency: String, at offset: UInt64) throws {
        resultFetches.want(dependency, at: offset)
        try startFetches()
    }

    /// Starts the reads of the offsets that wait for their turn (``ResultFetches/nextRead()``).
    private func startFetches() throws {
        while let offset = resultFetches.nextRead() {
            let consumerTag = try connection.consume(
                Topology.resultsStream, arguments: ["x-stream-offset": .int(Int64(clamping: offset))],
                channel: Self.fetchChannel)
            resultFetches.started(consumerTag, reading: offset)
        }
    }

    /// A message read by a fetch (``fetchResult(of:at:)``): the results wanted from it go to the jobs that wait for
    /// them. One the stream no longer holds (retention took its offset, and the read began further on) is resolved
    /// without a result, with a warning: its dependents run rather than wait for good.
    func handleFetchedResults(_ delivery: Delivery) throws {
        try connection.ack(delivery.deliveryTag, multiple: true, channel: Self.fetchChannel)
        if delivery.consumerTag == resultsStreamProbe { return try probedResultsStream(delivery) }
        guard let requested = resultFetches.offset(readBy: delivery.consumerTag) else { return }
        let offset = delivery.streamOffset
        if let offset, offset < requested { return }
        try connection.cancelConsumer(delivery.consumerTag, channel: Self.fetchChannel)
        var missing = resultFetches.finish(delivery.consumerTag)
        try startFetches()
        if offset == requested {
            for case .success(let result) in ResultBatch.results(in: delivery.body, type: delivery.properties.type)
            where missing.remove(result.jobID) != nil {
                try resolved(result.jobID, result: result)
            }
        }
        for jobID in missing.sorted() {
            logger.warning(
                "the results stream no longer holds a dependency's result; its dependents run without it",
                metadata: ["dependency": "\(jobID)", "offset": "\(requested)"])
            try resolved(jobID, result: nil)
        }
    }

    /// How far back the results stream is read for dependencies.
    static let dependencyHorizon: TimeInterval = 86_400

    /// Starts reading the results stream, from ``dependencyHorizon`` ago, the first time a job is parked.
    ///
    /// Where it starts takes care. A timestamp that no chunk of the stream is as recent as (the stream is empty, or
    /// has been silent for the whole horizon) resolves to the next chunk to be written, and RabbitMQ skips a chunk
    /// written while such a consumer attaches: a dependency's result missed, its dependents parked for good. A
    /// numeric offset has no such race. So an empty stream is read from offset 0; any other is first probed at its
    /// last chunk (``probedResultsStream(_:)``). The probe also tells where the first reading catches up
    /// (``ResultsCatchUp``): it runs for an empty stream too, whose count of messages may lag behind what it holds,
    /// and answers once the stream holds something.
    func readResultsStream() throws {
        guard !readsResultsStream else { return }
        try connection.openChannel(Self.fetchChannel)
        try connection.qos(prefetchCount: 1, channel: Self.fetchChannel)
        resultFetches.removeAll()
        try connection.openChannel(Self.resultsChannel)
        try connection.qos(prefetchCount: 1000, channel: Self.resultsChannel)
        readsResultsStream = true
        resultsCatchUp.start()
        let stored = try connection.declareQueue(Topology.resultsStream, passive: true, channel: Self.resultsChannel)
        if stored.messageCount == 0 { try consumeResultsStream(from: .int(0)) }
        resultsStreamProbe = try connection.consume(
            Topology.resultsStream, arguments: ["x-stream-offset": "last"], channel: Self.fetchChannel)
    }

    /// The first message of the probe of the stream's last chunk: unless it started already, reading starts at the
    /// horizon's timestamp if that chunk is more recent (the timestamp then resolves to a chunk that exists), else
    /// at the chunk's own offset.
    private func probedResultsStream(_ delivery: Delivery) throws {
        resultsStreamProbe = nil
        try connection.cancelConsumer(delivery.consumerTag, channel: Self.fetchChannel)
        resultsCatchUp.probed(lastChunk: delivery.streamOffset)
        guard !readsStoredResults else { return }
        let horizon = UInt64(max(0, Date().timeIntervalSince1970 - Self.dependencyHorizon))
        if let last = delivery.streamOffset, let written = delivery.properties.timestamp, written < horizon {
            try consumeResultsStream(from: .int(Int64(clamping: last)))
        } else {
            try consumeResultsStream(from: .timestamp(horizon))
        }
    }

    private func consumeResultsStream(from offset: AMQPFieldValue) throws {
        readsStoredResults = true
        logger.debug("reading the results stream for dependencies", metadata: ["from": "\(offset)"])
        try connection.consume(
            Topology.resultsStream, arguments: ["x-stream-offset": offset], channel: Self.resultsChannel)
    }

    /// A message of the `warren.results` stream: a batch of results, or one result.
    func handleStoredResult(_ delivery: Delivery) throws {
        try connection.ack(delivery.deliveryTag, multiple: true, channel: Self.resultsChannel)
        let offset = delivery.streamOffset
        for case .success(let result) in ResultBatch.results(in: delivery.body, type: delivery.properties.type) {
            try dependencyEnded(result, offset: offset)
        }
        // The rest of the last chunk comes in the same read, as a rule: the catching up ends with the turn.
        resultsCatchUp.read(offset)
    }

    /// Prefetch: the configured one, plus one for each parked job and each held one (``hold(_:_:_:_:)``).
    func updatePrefetch() throws {
        let prefetch = UInt16(min(basePrefetch + parked.count + heldJobs.count, 65_535))
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
