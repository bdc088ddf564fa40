import AMQP
import Foundation
import Synchronization

/// Publishes jobs and cancellations, and waits for results.
///
/// Every publish is persistent and confirmed by the broker before the call returns: once `enqueue` returns, the
/// job is safe in the broker. Control messages (cancellations, pauses, status requests, supersessions) go through
/// the `warren.control` stream: right after the broker restarts, while the stream starts again, the calls that send
/// them wait for it, up to 15 seconds.
///
/// ```swift
/// let producer = try Producer(url: "amqp://guest:guest@localhost/%2F")
/// let job = try producer.enqueue(JobRequest(type: "sum", input: ["numbers": [1, 2, 3]]), watch: true)
/// let result = try producer.waitForResult(of: job.id, timeout: .seconds(30))
/// ```
///
/// Thread safety: confined, as TN2109 confines a libxml2 parser: not `Sendable`; use it from the thread that
/// created it. Create one producer per thread that publishes, or share one ``SharedProducer`` among tasks.
public final class Producer {
    static let publishChannel: UInt16 = 1
    static let replyChannel: UInt16 = 2
    /// The channel for unique jobs' locks (``UniqueLock``), which the broker closes when it refuses a declaration.
    static let lockChannel: UInt16 = 3

    let connection: AMQPConnection
    /// Tells an ``enqueue(_:watch:)-([JobRequest],_)`` under way, from any thread, to publish no more jobs (see
    /// ``Interruption``).
    public let interruption = Interruption()
    let sequences: SequenceFile
    let journal: JobJournal
    /// Whether job queues this producer creates are priority queues.
    let priorityQueues: Bool
    /// Whether job queues this producer creates are quorum queues.
    let quorumQueues: Bool
    /// The number of the last publish on ``publishChannel``, as its confirm will name it.
    private(set) var publishCount: UInt64 = 0
    var lockChannelOpen = false
    private var declaredQueues: Set<String> = []
    /// Reply queues (``JobRequest/replyTo``) seen to exist: a result sent to a missing one would be lost.
    private var knownReplyQueues: Set<String> = []
    /// Job queues of the publishes the broker returned (`basic.return`) since the last wait for confirms.
    private var returnedQueues: [String] = []
    /// Every publish up to this number is answered.
    private var confirmedCount: UInt64 = 0
    /// Publishes above ``confirmedCount``, answered out of order.
    private var confirmedAhead: Set<UInt64> = []
    /// Publishes the broker refused since the last wait for its answers.
    private var refusedPublishes: Set<UInt64> = []
    private var controlDeclared = false
    private var replyQueue: String?
    private var watched = WatchedResults()
    /// Progress reports that arrived for watched jobs, oldest first.
    private var arrivedProgress: [ProgressMessage] = []

    /// Connects to the broker.
    /// - Parameters:
    ///   - url: `amqp://user:password@host:port/vhost`; several, separated by commas, are tried in turn.
    ///   - sequences: Where sequence numbers come from. Default: the host-wide ``SequenceStore``.
    ///   - priorityQueues: Whether job queues this producer has to create are priority queues (see
    ///     ``Worker/Configuration/priorityQueues``). Queues that exist are used as they are. Default: `false`.
    ///   - quorumQueues: Whether job queues this producer has to create are quorum queues, replicated on the nodes
    ///     of a cluster (see ``Worker/Configuration/quorumQueues``); not with `priorityQueues`. Default: `false`.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL or both kinds of queue, `broker` when the
    ///   connection fails).
    public init(
        url: String, sequences: SequenceStore = SequenceStore(), priorityQueues: Bool = false, quorumQueues: Bool = false
    ) throws {
        if let problem = Topology.problem(creatingPriorityQueues: priorityQueues, quorumQueues: quorumQueues) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        self.sequences = SequenceFile(sequences)
        self.priorityQueues = priorityQueues
        self.quorumQueues = quorumQueues
        journal = JobJournal(path: (sequences.path as NSString).deletingLastPathComponent + "/journal")
        let addresses = try BrokerAddresses(
            url, connectionName: "warren producer \(ProcessInfo.processInfo.processIdentifier)")
        connection = try addresses.connect()
        do {
            try connection.openChannel(Self.publishChannel)
            try connection.enableConfirms(channel: Self.publishChannel)
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }

    /// Closes the connection. Every call after it throws ``WarrenError`` (`invalidConfiguration`, "the producer was
    /// closed"); closing again does nothing.
    public func close() {
        connection.close()
    }

    /// Publishes a job and returns its descriptor once the broker confirmed it.
    /// - Parameters:
    ///   - request: The job.
    ///   - watch: Also start collecting its result, for ``waitForResult(of:timeout:progress:)``.
    /// - Throws: ``WarrenError`` when the broker refuses the job or the connection fails.
    @discardableResult
    public func enqueue(_ request: JobRequest, watch: Bool = false) throws -> OperationDescriptor {
        try enqueue([request], watch: watch)[0]
    }

    /// Publishes jobs and returns their descriptors once the broker confirmed all of them.
    ///
    /// Jobs may depend on each other and on jobs enqueued earlier with this state directory; they are published so
    /// that a job comes after those it depends on, and a bad graph is refused before anything is published. Their
    /// sequence numbers are consecutive, in the order they are published, reserved from ``SequenceStore`` at once.
    /// - Parameters:
    ///   - requests: The jobs.
    ///   - watch: Also start collecting their results, for ``waitForResult(of:timeout:progress:)``: the jobs name
    ///   this producer's reply queue in their `reply_to`, so their results and progress reports come straight to it.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for an invalid id or job queue name
    ///   (``Topology/problem(withJobQueue:)``), a job that depends on itself, an unknown dependency or a cycle, a
    ///   ``JobRequest/replyTo`` that is empty, longer than 255 bytes, given with `watch` or names no existing queue,
    ///   a deadline that is not after the job's ``JobRequest/notBefore``, a time limit outside 1 ms to a year, a
    ///   unique job without a key, with a lifetime outside 1 second to 7 days (``JobRequest/uniqueFor``) or one that
    ///   would end before the job may start; (`system`) when the state directory's sequence file or job journal
    ///   cannot be used (created, locked, read or written); (`duplicate`) when another job
    ///   holds a unique job's lock: nothing of the call was enqueued; (`queueUnreachable`) when a job queue is on a
    ///   cluster node that is down, or the broker took a job nowhere (its queue deleted since this producer declared
    ///   it, or its node down since): those jobs were not enqueued, the others of the call were; (`broker`) when the
    ///   broker refuses or the connection fails.
    @discardableResult
    public func enqueue(_ requests: [JobRequest], watch: Bool = false) throws -> [OperationDescriptor] {
        guard !requests.isEmpty else { return [] }
        let dependent = requests.contains { !$0.dependencies.isEmpty }
        let checked = requests.filter { $0.checksDependencies && !$0.dependencies.isEmpty }
        let outside = checked.isEmpty ? [] : Set(checked.flatMap(\.dependencies)).subtracting(requests.map(\.id))
        let ordered = try DependencyGraph.ordered(requests, known: try journal.known(outside))
        if watch, let request = requests.first(where: { $0.replyTo != nil }) {
            throw WarrenError(
                .invalidConfiguration,
                "job \(request.id) names reply queue '\(request.replyTo!)'; a watched job's result goes to the producer's own")
        }
        let descriptors: [OperationDescriptor] = try brokerCall {
            if let problem = ordered.lazy.compactMap({ OperationDescriptor.problem(withID: $0.id) }).first {
                throw WarrenError(.invalidConfiguration, problem)
            }
            if let problem = ordered.lazy.compactMap({ Topology.problem(withJobQueue: $0.queue) }).first {
                throw WarrenError(.invalidConfiguration, problem)
            }
            if let request = ordered.first(where: { OperationDescriptor.problem(withType: $0.type) != nil }) {
                throw WarrenError(
                    .invalidConfiguration, "job \(request.id): \(OperationDescriptor.problem(withType: request.type)!)")
            }
            if let problem = Self.problem(withUnique: ordered) {
                throw WarrenError(.invalidConfiguration, problem)
            }
            for request in ordered {
                guard let limit = request.timeLimit,
                    let problem = OperationDescriptor.problem(withTimeLimit: limit / .seconds(1))
                else { continue }
                throw WarrenError(.invalidConfiguration, "job \(request.id): \(problem)")
            }
            if let request = ordered.first(where: { $0.replyTo.map { !(1...255).contains($0.utf8.count) } ?? false }) {
                throw WarrenError(
                    .invalidConfiguration, "job \(request.id): a reply queue name must be 1 to 255 bytes long")
            }
            if let request = ordered.first(where: { $0.replyTo.map(Topology.isOwnQueue) ?? false }) {
                throw WarrenError(
                    .invalidConfiguration,
                    "job \(request.id): reply queue '\(request.replyTo!)' is one of Warren's own queues")
            }
            for request in ordered {
                if let date = [request.deadline, request.notBefore].compactMap({ $0 }).first(where: {
                    !WireCoding.dateRange.contains($0.timeIntervalSince1970)
                }) {
                    throw WarrenError(
                        .invalidConfiguration,
                        "job \(request.id): \(date == request.deadline ? "deadline" : "notBefore") is outside the "
                            + "years 0001 to 9999, which the wire format's dates cover")
                }
                if let attempts = request.maxAttempts, attempts < 1 {
                    throw WarrenError(
                        .invalidConfiguration, "job \(request.id): maxAttempts \(attempts) must be at least 1")
                }
            }
            if let request = ordered.first(where: { request in
                guard let deadline = request.deadline, let notBefore = request.notBefore else { return false }
                return deadline <= notBefore
            }) {
                throw WarrenError(
                    .invalidConfiguration,
                    "job \(request.id): its deadline is not after its notBefore: it could never start")
            }
            try checkReplyQueuesExist(ordered)
            try checkNoStreams(ordered)
            let replyTo = watch ? try declareReplyQueue() : nil
            let locked = try takeUniqueLocks(of: ordered)
            var published = false
            // Locks of jobs sure not to be enqueued are released; after a lost connection they expire.
            do {
                return try publishJobs(ordered, replyTo: replyTo, locked: locked, published: &published)
            } catch where !published && (error as? WarrenError)?.code != .interrupted {
                // (An interrupted call released the locks of the jobs it did not send.)
                try? releaseUniqueLocks(of: locked)
                throw error
            }
        }
        guard dependent else { return descriptors }
        let order = Dictionary(uniqueKeysWithValues: requests.enumerated().map { ($1.id, $0) })
        return descriptors.sorted { order[$0.id]! < order[$1.id]! }
    }

    /// Publishes the jobs of a checked call, in order, and waits for the broker's confirms; releases the unique
    /// locks of the jobs in `locked` that the broker refused or returned.
    /// - Parameter published: Set once the first job is handed to the connection.
    private func publishJobs(
        _ ordered: [JobRequest], replyTo: String?, locked: [JobRequest], published: inout Bool
    ) throws -> [OperationDescriptor] {
        var jobs: [(request: JobRequest, descriptor: OperationDescriptor, body: [UInt8])] = []
        for (request, sequence) in zip(ordered, try sequences.reserve(ordered.count)) {
            let descriptor = OperationDescriptor(
                id: request.id, type: request.type, input: request.input, priority: request.priority,
                sequence: sequence, key: request.key, deadline: request.deadline, notBefore: request.notBefore,
                maxAttempts: request.maxAttempts, timeLimitSeconds: request.timeLimit.map { $0 / .seconds(1) },
                unique: request.uniqueFor != nil ? true : nil,
                dependencies: request.dependencies.isEmpty ? nil : request.dependencies.uniqued(),
                requireSuccess: request.requireSuccess ? true : nil)
            jobs.append((request, descriptor, try descriptor.encoded()))
        }
        // Every queue the jobs go to is declared before the first leaves: one the broker refuses (no permission to
        // configure it, the virtual host's queue limit) fails a call that published nothing, not half a graph.
        var queues: Set<String> = []
        for request in ordered where queues.insert(request.queue).inserted {
            try declareJobQueue(request.queue)
        }
        // Recorded just before they leave: a journal that cannot be written fails a call that published nothing,
        // and a job the broker may hold (unconfirmed, or confirmed beside a refused one) is known to later
        // dependents.
        try journal.append(ordered.map(\.id))
        // The jobs leave with one `send` rather than three system calls each: sent as soon as they are written
        // (and on the way out when a publish fails).
        connection.holdOutput()
        defer { connection.flushOutput() }
        var numbers: [UInt64: SentJob] = [:]
        var handed = 0
        let refusedJobs: [JobRequest]
        let sends: Int
        do {
            for (request, descriptor, body) in jobs {
                guard !interruption.isRequested else { break }
                published = true
                handed += 1
                let job = SentJob(
                    request: request, body: body,
                    properties: MessageProperties(
                        contentType: WireCoding.contentType, persistent: true,
                        priority: descriptor.priority.amqpPriority, replyTo: replyTo ?? request.replyTo,
                        messageID: descriptor.id,
                        timestamp: UInt64(Date().timeIntervalSince1970), type: descriptor.type, appID: "warren"))
                numbers[try send(job)] = job
                if replyTo != nil { watched.watch([request.id]) }
            }
            connection.flushOutput()
            let refused = try waitForAnswers().sorted().compactMap { numbers[$0] }
            let (stillRefused, tries) = try sendingAgain(refused)
            (refusedJobs, sends) = (stillRefused.map(\.request), tries)
        } catch let error as WarrenError where error.code == .timeout {
            let ids = ordered.map(\.id)
            throw WarrenError(
                .timeout,
                "the broker did not confirm \(Self.jobs(ids)) within 30 s (\(WarrenError.unconfirmedCauses)): "
                    + Self.mayBeEnqueued(ids.count), unconfirmedJobIDs: ids)
        } catch let error as AMQPError where published {
            if let limit = error.brokerMaxMessageSize,
                let index = jobs.prefix(handed).firstIndex(where: { $0.body.count > limit })
            {
                throw tooLarge(
                    jobs[index].request, size: jobs[index].body.count, limit: limit, in: ordered, at: index,
                    locked: locked)
            }
            try? journal.retract(ordered.dropFirst(handed).map(\.id))
            if error.replyCode == 403, error.replyText?.contains("exchange 'amq.default'") == true {
                // Every job goes through the default exchange, which this user may not write to: none was taken.
                try? journal.retract(ordered.prefix(handed).map(\.id))
                try? releaseUniqueLocks(of: locked)
                var refusal = WarrenError(broker: error)
                refusal.message += "; no job of the call was enqueued"
                throw refusal
            }
            // The jobs handed to the connection may have reached the broker; the others of the call did not.
            let ids = ordered.prefix(handed).map(\.id)
            throw WarrenError(
                error.isQueueNodeDown ? .queueUnreachable : .broker,
                "\(error.description); the broker did not confirm \(Self.jobs(ids)) before: "
                    + Self.mayBeEnqueued(ids.count)
                    + (handed < ordered.count ? "; the \(ordered.count - handed) after them were not enqueued" : ""),
                unconfirmedJobIDs: ids)
        }
        let returned = Set(returnedQueues)
        let unsent = ordered.dropFirst(handed).map(\.id)
        let lost = Set(
            refusedJobs.map(\.id) + ordered.prefix(handed).filter { returned.contains($0.queue) }.map(\.id) + unsent)
        if !lost.isEmpty {
            try? releaseUniqueLocks(of: locked.filter { lost.contains($0.id) })
            // Not enqueued after all: a later dependent of theirs is refused as unknown, not parked for ever.
            try? journal.retract(ordered.map(\.id).filter(lost.contains))
        }
        let enqueued = ordered.map(\.id).filter { !lost.contains($0) }
        // Jobs that depend on one the broker refused could never start: they supersede nothing, and are cancelled.
        let stranded = Self.dependents(of: lost.subtracting(unsent), in: ordered)
        let superseding = jobs.filter { $0.request.supersede && !lost.contains($0.request.id) }
            .filter { !stranded.contains($0.request.id) }.map(\.descriptor)
        try supersede(for: superseding, enqueued: enqueued)
        let strandedNote = try cancel(stranded: stranded, locked: locked)
        // An interruption while refused jobs were sent again ends them unsent, as the others after it.
        if !unsent.isEmpty || (interruption.isRequested && !refusedJobs.isEmpty) {
            let other = ordered.count - enqueued.count
            var interrupted = WarrenError(
                .interrupted,
                (enqueued.isEmpty
                    ? "interrupted: none of the \(ordered.count) jobs was enqueued"
                    : "interrupted: \(enqueued.count) of the \(ordered.count) jobs were enqueued, the other \(other) "
                        + "were not")
                    + (refusedJobs.isEmpty ? "" : " (the broker refused \(refusedJobs.count) of those it was sent)")
                    + strandedNote)
            interrupted.enqueuedJobIDs = enqueued
            throw interrupted
        }
        if let job = refusedJobs.first {
            let seconds = Self.refusalRetryWaits.prefix(sends - 1).reduce(.zero, +) / .seconds(1)
            var refusal = WarrenError(
                .broker,
                "the broker refused \(Self.jobs(refusedJobs.map(\.id))) for queue '\(job.queue)' (basic.nack, "
                    + (sends == 1 ? "sent once" : "sent \(sends) times over \(String(format: "%g", seconds)) s")
                    + ": the queue is at its length limit, with x-overflow reject-publish (reject-publish-dlx also "
                    + "puts a copy in warren.dead), or is a quorum queue that has lost the majority of its nodes, or "
                    + "found no new leader in that time); \(refusedJobs.count == 1 ? "it was" : "they were") not "
                    + "enqueued" + (ordered.count > refusedJobs.count ? ", the others of the call were" : "")
                    + strandedNote)
            refusal.enqueuedJobIDs = enqueued
            throw refusal
        }
        do {
            try checkNothingReturned()
        } catch var error as WarrenError {
            error.message += strandedNote
            error.enqueuedJobIDs = enqueued
            throw error
        }
        return jobs.map(\.descriptor)
    }

    /// The ids of the jobs of `ordered` that depend, directly or not, on one of `lost` (and are not among them),
    /// in order.
    static func dependents(of lost: Set<String>, in ordered: [JobRequest]) -> [String] {
        var unreachable = lost
        var dependents: [String] = []
        // Dependencies come before their dependents in `ordered`.
        for request in ordered where !unreachable.contains(request.id) {
            guard request.dependencies.contains(where: unreachable.contains) else { continue }
            unreachable.insert(request.id)
            dependents.append(request.id)
        }
        return dependents
    }

    /// Cancels `stranded`, jobs the broker took that depend on one it did not, and frees the unique locks of those
    /// of them in `locked`: they could never start. Returns what to add to the error's message, empty if none.
    private func cancel(stranded: [String], locked: [JobRequest]) throws -> String {
        guard !stranded.isEmpty else { return "" }
        let named = "; the \(stranded.count) enqueued job(s) depending on them (\(Self.jobs(stranded))) could never start"
        try? releaseUniqueLocks(of: locked.filter { stranded.contains($0.id) })
        do {
            try cancel(jobIDs: stranded)
            return named + ", and were cancelled"
        } catch {
            return named + ", and could not be cancelled (\(error)): warren cancel does it"
        }
    }

    /// A job handed to the broker, as it went.
    private struct SentJob {
        let request: JobRequest
        let body: [UInt8]
        let properties: MessageProperties
    }

    /// Publishes `job` to its queue and returns the number its confirm will have.
    private func send(_ job: SentJob) throws -> UInt64 {
        // Mandatory: a queue deleted since this producer declared it, or on a cluster node that is down, would take
        // nothing and the broker would confirm the publish all the same.
        try publish(job.body, exchange: "", routingKey: job.request.queue, properties: job.properties, mandatory: true)
        return publishCount
    }

    /// The error for a call whose job at `index` of `ordered` is larger than the broker takes (its `max_message_size`):
    /// the broker closed the channel at it, so neither it nor the jobs after it were enqueued; those before it may
    /// be. Takes the jobs not enqueued back from the journal, and their unique locks.
    private func tooLarge(
        _ job: JobRequest, size: Int, limit: Int, in ordered: [JobRequest], at index: Int, locked: [JobRequest]
    ) -> WarrenError {
        let before = ordered.prefix(index).map(\.id)
        let notEnqueued = Set(ordered.dropFirst(index).map(\.id))
        try? journal.retract(ordered.dropFirst(index).map(\.id))
        try? releaseUniqueLocks(of: locked.filter { notEnqueued.contains($0.id) })
        var message =
            "job \(job.id) is \(size) bytes; the broker takes messages of at most \(limit) bytes (its "
            + "max_message_size): it was not enqueued"
        if ordered.count > index + 1 { message += ", nor the \(ordered.count - index - 1) after it" }
        if !before.isEmpty {
            message +=
                "; the broker did not confirm \(Self.jobs(before)) before it: " + Self.mayBeEnqueued(before.count)
        }
        return WarrenError(.broker, message, unconfirmedJobIDs: before)
    }

    /// The waits before a job the broker refused (`basic.nack`) is sent again: a quorum queue refuses publishes
    /// while it elects a new leader, after the node of its last one failed, for a moment.
    static let refusalRetryWaits: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2)]

    /// Sends `refused` again, on a fresh channel, after each of ``refusalRetryWaits`` while the broker refuses some
    /// (and no ``interruption`` came); returns those it still refuses, and how many times they were sent in all.
    /// Jobs for a queue known to be classic are not sent again: such a queue refuses for being full, which waiting
    /// does not mend, and with x-overflow reject-publish-dlx it dead-letters each refused copy.
    private func sendingAgain(_ refused: [SentJob]) throws -> ([SentJob], Int) {
        guard !refused.isEmpty else { return ([], 1) }
        var classic: Set<String> = []
        for queue in Set(refused.map(\.request.queue)) where try Topology.isKnownClassicQueue(queue, on: connection) {
            classic.insert(queue)
        }
        let full = refused.filter { classic.contains($0.request.queue) }
        var refused = refused.filter { !classic.contains($0.request.queue) }
        guard !refused.isEmpty else { return (full, 1) }
        var sends = 1
        for wait in Self.refusalRetryWaits where !refused.isEmpty && !interruption.isRequested {
            Thread.sleep(forTimeInterval: wait / .seconds(1))
            sends += 1
            try reopenPublishChannel()
            var numbers: [UInt64: SentJob] = [:]
            for job in refused { numbers[try send(job)] = job }
            connection.flushOutput()
            refused = try waitForAnswers().sorted().compactMap { numbers[$0] }
        }
        // The next call starts on a channel the broker has not refused.
        if !refused.isEmpty { try reopenPublishChannel() }
        return (full + refused, sends)
    }

    /// Opens the publish channel afresh, its publishes numbered from 1 again: once RabbitMQ (3.10) refused a
    /// channel's publish to a quorum queue electing a leader, it goes on refusing that channel's publishes there
    /// for seconds after a new channel's are taken.
    private func reopenPublishChannel() throws {
        try connection.closeChannel(Self.publishChannel)
        try connection.openChannel(Self.publishChannel)
        try connection.enableConfirms(channel: Self.publishChannel)
        (publishCount, confirmedCount, confirmedAhead, refusedPublishes) = (0, 0, [], [])
    }

    /// Cancels the jobs of each key of `descriptors` (superseding jobs the broker confirmed) older than its job:
    /// only once the new job is enqueued, so that a job the broker refuses supersedes nothing.
    /// - Throws: ``WarrenError`` naming the `enqueued` jobs, when the control message does not get through: the
    ///   older jobs run on.
    private func supersede(for descriptors: [OperationDescriptor], enqueued: [String]) throws {
        let superseding = descriptors.filter { $0.key != nil }
        guard !superseding.isEmpty else { return }
        do {
            for descriptor in superseding {
                try publishControl(.supersede(key: descriptor.key!, before: descriptor.sequence))
            }
            try waitForConfirms()
        } catch {
            let reason = (error as? WarrenError)?.message ?? "\(error)"
            let commands = superseding.map { "warren cancel --key \($0.key!) --before \($0.sequence)" }
            var failure = WarrenError(
                .broker,
                "\(reason); the jobs were enqueued, but the older jobs of their keys were not superseded: "
                    + commands.joined(separator: "; ") + " cancels them")
            failure.enqueuedJobIDs = enqueued
            failure.isAccessRefused = (error as? AMQPError)?.replyCode == 403
            throw failure
        }
    }

    /// Tells a producer to publish no more jobs: from any thread (a signal handler's), while an
    /// ``enqueue(_:watch:)-([JobRequest],_)`` is under way on the producer's own. That call publishes none of its
    /// jobs after this, waits for the broker's answers to those it handed over, and throws ``WarrenError``
    /// `interrupted` naming the ones enqueued (``WarrenError/enqueuedJobIDs``); the others are not enqueued: their
    /// unique locks are released and they are unknown to later dependents. Later calls publish nothing: an
    /// interruption does not wear off.
    ///
    /// Thread safety: atomic.
    public final class Interruption: Sendable {
        private let requested = Atomic(false)

        /// Asks the producer to publish no more jobs.
        public func interrupt() {
            requested.store(true, ordering: .relaxed)
        }

        /// Whether ``interrupt()`` was called.
        public var isRequested: Bool {
            requested.load(ordering: .relaxed)
        }
    }

    /// `job ID`, `jobs ID, ID, ID`, or `jobs ID, ID, ID and N more`.
    private static func jobs(_ ids: [String]) -> String {
        "job\(ids.count == 1 ? "" : "s") \(ids.prefix(3).joined(separator: ", "))"
            + (ids.count > 3 ? " and \(ids.count - 3) more" : "")
    }

    /// That `count` unconfirmed jobs may be enqueued, and how to take them back.
    private static func mayBeEnqueued(_ count: Int) -> String {
        "\(count == 1 ? "it" : "they") may be enqueued all the same; warren cancel takes \(count == 1 ? "it" : "them") back"
    }

    /// Cancels jobs wherever they are: executing (their code sees `isCancelled`), waiting in a worker (they never
    /// start) or still in the broker (they are not run when delivered). Each ends with one `cancelled` result.
    public func cancel(jobIDs: [String]) throws {
        try brokerCall {
            // In messages of at most 10,000 ids: workers read none larger than 8 MiB.
            for start in stride(from: 0, to: jobIDs.count, by: ControlMessage.idsPerCancel) {
                let end = min(start + ControlMessage.idsPerCancel, jobIDs.count)
                try publishControl(.cancel(jobIDs: Array(jobIDs[start..<end])))
            }
            try waitForConfirms()
        }
    }

    /// Cancels every job of `key` whose sequence is below `sequence`.
    public func supersede(key: String, before sequence: UInt64) throws {
        try brokerCall {
            try publishControl(.supersede(key: key, before: sequence))
            try waitForConfirms()
        }
    }

    /// Cancels every job enqueued before this call, of `queue` or of every queue: executing, waiting in workers
    /// and still in the broker. Each ends with one `cancelled` result.
    public func cancelAll(queue: String? = nil) throws {
        try brokerCall {
            try publishControl(.cancelAll(before: try sequences.next(), queue: queue))
            try waitForConfirms()
        }
    }

    /// Pauses taking jobs, on every worker or on `worker`, from every queue or from `queue`. Executing jobs go on;
    /// jobs waiting in the paused workers go back to the broker. Workers that start later start paused too.
    public func pause(worker: String? = nil, queue: String? = nil) throws {
        try brokerCall {
            try publishControl(.pause(worker: worker, queue: queue))
            try waitForConfirms()
        }
    }

    /// Sets the width of local queue `localQueue` to `width` on every live worker that has it, or on `worker` alone,
    /// as setting an `OperationQueue`'s `maxConcurrentOperationCount` does: wider, waiting jobs start at once;
    /// narrower, executing ones go on. A worker whose prefetch follows its widths (no `--prefetch`) takes more or
    /// fewer jobs accordingly. Until the worker restarts; workers that start later keep their own widths.
    /// - Throws: ``WarrenError``: `invalidConfiguration` for a width outside ``LocalQueue/widths``; `broker` when
    ///   the connection fails.
    public func resize(localQueue: String, width: Int, worker: String? = nil) throws {
        guard LocalQueue.widths.contains(width) else {
            throw WarrenError(
                .invalidConfiguration,
                "width \(width) is outside \(LocalQueue.widths.lowerBound)...\(LocalQueue.widths.upperBound)")
        }
        try brokerCall {
            try publishControl(.resize(localQueue: localQueue, width: width, worker: worker))
            try waitForConfirms()
        }
    }

    /// Resumes what ``pause(worker:queue:)`` paused.
    public func resume(worker: String? = nil, queue: String? = nil) throws {
        try brokerCall {
            try publishControl(.resume(worker: worker, queue: queue))
            try waitForConfirms()
        }
    }

    /// How long ``workerStatuses(timeout:jobs:awaiting:)`` waits at least for the broker to take its request before
    /// it concludes that the broker blocks publishers.
    static let statusConfirmWait = Duration.seconds(2)

    /// Asks every live worker for its status and returns the answers that arrive within `timeout`, by worker id
    /// (then host and process: workers that share an id by mistake answer each).
    /// - Parameter timeout: How long to collect answers.
    /// - Parameter jobs: With a number, each worker also lists up to that many of the jobs it holds
    ///   (``WorkerStatus/jobs``); workers of versions that predate the listing leave it out.
    /// - Parameter awaitedWorker: With a worker id, returns as soon as that worker answered, with the answers that
    ///   came so far.
    /// - Throws: ``WarrenError``: `timeout` when the broker did not even take the request within `timeout`, or 2 s
    ///   for a shorter one (it blocks publishers under a memory or disk alarm: the connection is then of no more
    ///   use); `broker` when it refused it or the connection fails.
    public func workerStatuses(
        timeout: Duration = .seconds(2), jobs: Int? = nil, awaiting awaitedWorker: String? = nil
    ) throws -> [WorkerStatus] {
        try workerStatuses(timeout: timeout, jobs: jobs, awaitingOne: awaitedWorker.map { id in { $0.workerID == id } })
    }

    /// ``workerStatuses(timeout:jobs:awaiting:)``, returning as soon as an answer `awaited` accepts came.
    package func workerStatuses(
        timeout: Duration, jobs: Int? = nil, awaitingOne awaited: ((WorkerStatus) -> Bool)?
    ) throws -> [WorkerStatus] {
        try brokerCall {
            let channel: UInt16 = 3
            try connection.openChannel(channel)
            let replyQueue = try connection.declareQueue(
                "", durable: false, exclusive: true, autoDelete: true, channel: channel
            ).name
            try connection.consume(replyQueue, noAck: true, channel: channel)
            try publishControl(.status(replyTo: replyQueue, jobs: jobs))
            let start = ContinuousClock.now
            // By worker id, host and process: workers given the same id by mistake answer each.
            var statuses: [String: WorkerStatus] = [:]
            let collect = { (delivery: Delivery) in
                guard delivery.channel == channel, let status = try? WorkerStatus.decode(delivery.body) else { return }
                statuses["\(status.workerID)\u{0}\(status.host)\u{0}\(status.pid)"] = status
            }
            let done = { awaited.map { statuses.values.contains(where: $0) } ?? false }
            try readEvents(until: start + timeout, done: done, other: collect)
            // No answer can come before the broker took the request; a broker that blocks this connection answers
            // no call either, closing the channel included. A timeout shorter than the broker's confirm takes does
            // not make a blocked broker of it.
            let confirmWait = max(timeout, Self.statusConfirmWait)
            if statuses.isEmpty {
                try readEvents(until: start + confirmWait, done: { self.confirmedCount >= self.publishCount })
            }
            guard !statuses.isEmpty || confirmedCount >= publishCount else {
                throw WarrenError(
                    .timeout,
                    "the broker did not take the status request within \(confirmWait) (\(WarrenError.unconfirmedCauses))")
            }
            try waitForConfirms()
            try connection.closeChannel(channel)
            return statuses.values.sorted {
                ($0.workerID, $0.host, $0.pid) < ($1.workerID, $1.host, $1.pid)
            }
        }
    }

    /// What the broker holds for job queue `queue`: jobs waiting, jobs in its delay queues, consumers; `nil` if
    /// there is no such queue.
    /// - Throws: ``WarrenError``: `queueUnreachable` when the queue, or one of its delay queues, lives on a cluster
    ///   node that is down; `broker` when the connection fails.
    public func jobQueueStatus(_ queue: String) throws -> JobQueueStatus? {
        try brokerCall {
            guard let info = try Topology.lookUp(queue, on: connection) else { return nil }
            var delayed = 0
            for seconds in Topology.delayQueueSeconds {
                let delayQueue = Topology.delayQueue(for: queue, seconds: seconds)
                delayed += Int(try Topology.lookUp(delayQueue, on: connection)?.messageCount ?? 0)
            }
            return JobQueueStatus(
                queue: queue, waiting: Int(info.messageCount), delayed: delayed, consumers: Int(info.consumerCount))
        }
    }

    /// Whether the broker delivers the jobs of `queue` highest priority first: whether it is a priority queue as
    /// `--priority-queues` creates one. On a first-in-first-out queue, a job's priority orders it only among the jobs
    /// waiting inside a worker. `false` also when there is no such queue.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func deliversByPriority(_ queue: String) throws -> Bool {
        try brokerCall { try Topology.isPriorityQueue(queue, on: connection) }
    }

    /// Whether job queue `queue` is known to be a classic queue (``Topology/isKnownClassicQueue(_:on:)``): on a
    /// cluster, it lives on one node, whatever `quorumQueues` says, which applies to queues this producer creates.
    /// `false` also when it does not exist.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func isClassicQueue(_ queue: String) throws -> Bool {
        try brokerCall {
            try Topology.lookUp(queue, on: connection) != nil && Topology.isKnownClassicQueue(queue, on: connection)
        }
    }

    /// How many messages the dead-letter queue holds (`warren dead list` shows them), or `nil` when there is no
    /// such queue: no worker has connected to this virtual host yet, or it was deleted (each worker makes it again
    /// as it connects; meanwhile jobs a worker dead-letters are held, and the broker's own dead letters dropped).
    /// - Throws: ``WarrenError``: `queueUnreachable` when the queue lives on a cluster node that is down; `broker`
    ///   when the connection fails.
    public func deadLetterCount() throws -> Int? {
        try brokerCall { try Topology.lookUp(Topology.deadQueue, on: connection).map { Int($0.messageCount) } }
    }

    /// Waits for the result of a job enqueued with `watch: true`.
    /// - Parameters:
    ///   - jobID: The job.
    ///   - timeout: How long to wait.
    ///   - progress: Called with each progress report of the job while it runs.
    /// - Throws: ``WarrenError`` (`timeout`) when no result arrived in time; (`invalidConfiguration`) at once when
    ///   this producer did not enqueue the job with `watch: true`, or handed out its result already.
    public func waitForResult(
        of jobID: String, timeout: Duration, progress: (ProgressMessage) -> Void = { _ in }
    ) throws -> JobResult {
        try waitForFirstResult(of: [jobID], timeout: timeout, progress: progress)
    }

    /// Waits for the first result to arrive of jobs enqueued with `watch: true`, whichever it is: call it again with
    /// the others to take their results as they come.
    /// - Parameters:
    ///   - jobIDs: The jobs.
    ///   - timeout: How long to wait.
    ///   - progress: Called with each progress report of those jobs while they run.
    /// - Throws: ``WarrenError`` (`timeout`, naming the jobs) when none arrived in time; (`invalidConfiguration`) at
    ///   once when none of them is a job this producer enqueued with `watch: true` and whose result it has not
    ///   handed out.
    public func waitForFirstResult(
        of jobIDs: Set<String>, timeout: Duration, progress: (ProgressMessage) -> Void = { _ in }
    ) throws -> JobResult {
        guard jobIDs.contains(where: watched.isWatching) else { throw Self.notWatched(jobIDs) }
        let deadline = ContinuousClock.now + timeout
        return try brokerCall {
            while true {
                for report in arrivedProgress where jobIDs.contains(report.jobID) { progress(report) }
                arrivedProgress.removeAll { jobIDs.contains($0.jobID) }
                if let jobID = jobIDs.first(where: watched.hasArrived), let result = watched.take(jobID) {
                    return result
                }
                let left = deadline - ContinuousClock.now
                guard left > .zero else {
                    let seconds = (timeout / .milliseconds(1)).rounded() / 1000
                    let ids = jobIDs.sorted()
                    throw WarrenError(
                        .timeout,
                        "no result for job\(ids.count == 1 ? "" : "s") \(ids.prefix(3).joined(separator: ", "))"
                            + "\(ids.count > 3 ? " and \(ids.count - 3) more" : "") "
                            + "within \(String(format: "%g", seconds)) s")
                }
                try readEvents(until: deadline) {
                    jobIDs.contains(where: watched.hasArrived)
                        || arrivedProgress.contains { jobIDs.contains($0.jobID) }
                }
            }
        }
    }

    // MARK: - Internals

    private func brokerCall<T>(_ body: () throws -> T) throws -> T {
        guard connection.isOpen else { throw Self.closedError }
        do {
            return try body()
        } catch let error as AMQPError where error.code == .closed {
            throw Self.closedError
        } catch let error as AMQPError {
            throw WarrenError(error.isQueueNodeDown ? .queueUnreachable : .broker, error.description)
        }
    }

    /// What every call after ``close()`` throws.
    static let closedError = WarrenError(.invalidConfiguration, "the producer was closed")

    /// Refuses jobs whose reply queue does not exist: the broker would drop their results and progress reports
    /// (only the `warren.results` stream would keep the results). A queue exclusive to another connection exists.
    private func checkReplyQueuesExist(_ requests: [JobRequest]) throws {
        for request in requests {
            guard let queue = request.replyTo, !knownReplyQueues.contains(queue) else { continue }
            guard try Topology.queueExists(queue, on: connection) else {
                throw WarrenError(
                    .invalidConfiguration,
                    "job \(request.id): reply queue '\(queue)' does not exist; declare it before enqueueing jobs "
                        + "that name it (the broker would drop their results)")
            }
            knownReplyQueues.insert(queue)
        }
    }

    /// Refuses jobs for a queue that is a stream (one declared with no other argument: ``Topology/isStream(_:on:)``):
    /// a stream hands every job to every worker, and a worker does not consume one, so the job would never run.
    private func checkNoStreams(_ requests: [JobRequest]) throws {
        for queue in Set(requests.map(\.queue)).subtracting(declaredQueues).sorted() {
            guard try Topology.isStream(queue, on: connection) else { continue }
            throw WarrenError(
                .invalidConfiguration,
                "queue '\(queue)' is a stream, which hands every job to every worker: workers do not consume one; "
                    + "send jobs to a classic or quorum queue")
        }
    }

    private func declareJobQueue(_ queue: String) throws {
        guard !declaredQueues.contains(queue) else { return }
        try Topology.declareJobQueue(
            queue, priorities: priorityQueues, quorum: quorumQueues, on: connection, channel: Self.publishChannel)
        declaredQueues.insert(queue)
    }

    private func publishControl(_ message: ControlMessage) throws {
        if !controlDeclared {
            try declareControl()
            controlDeclared = true
        }
        try publish(
            try message.encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true, appID: "warren"))
    }

    /// Declares the control exchange and stream on ``Topology/declarationChannel``, unless the stream exists (a
    /// producer that finds it, which a worker made, needs no permission to configure it), and again while the
    /// stream is still starting (a worker just created it, or the broker just restarted): the broker then closes that
    /// channel, not the one the jobs went out on, whose confirms are still awaited.
    private func declareControl() throws {
        let channel = Topology.declarationChannel
        try AMQPError.retryingWhileStreamStarts {
            guard try Topology.lookUp(Topology.controlStream, on: connection) == nil else { return }
            try connection.openChannel(channel)
            try Topology.declareControl(on: connection, channel: channel)
            try connection.closeChannel(channel)
        }
    }

    /// Keeps the results and progress reports of watched jobs that the broker sent, for ``takeResult(of:)``:
    /// waits first, up to `timeout` or until `wakeUp` is signalled, if nothing came yet. For ``SharedProducer``,
    /// whose thread must also wake for calls.
    func readReplies(waitingUpTo timeout: Duration, wakeUp: WakeUpSignal) throws {
        try brokerCall {
            _ = connection.waitForActivity(wakeUp: wakeUp, timeout: timeout)
            try readEvents(until: .now) { false }
        }
    }

    /// The result of watched job `jobID`, if it arrived; it is then forgotten.
    func takeResult(of jobID: String) -> JobResult? {
        watched.take(jobID)
    }

    /// Whether this producer expects the result of `jobID` or holds it: it enqueued the job with `watch: true`,
    /// and nobody took the result yet.
    func isWatching(_ jobID: String) -> Bool {
        watched.isWatching(jobID)
    }

    /// The jobs this producer enqueued with `watch: true` whose results it has not handed out.
    var watchedJobIDs: Set<String> { watched.jobIDs }

    /// The error of a wait for the results of `jobIDs`, none of which this producer watches.
    static func notWatched(_ jobIDs: Set<String>) -> WarrenError {
        let ids = jobIDs.sorted()
        guard !ids.isEmpty else { return WarrenError(.invalidConfiguration, "no jobs to wait for") }
        return WarrenError(
            .invalidConfiguration,
            "job\(ids.count == 1 ? " \(ids[0]) is" : "s \(ids.prefix(3).joined(separator: ", ")) are") not watched by "
                + "this producer: results come to a producer only for the jobs it enqueued with watch: true, each "
                + "once, and it keeps the latest \(WatchedResults.maxKept) that nobody took; read others from the "
                + "warren.results stream (ResultReader, warren results --job)")
    }

    /// The producer's reply queue, declared on first use: server-named, exclusive, consumed on ``replyChannel``.
    /// Watched jobs name it in their `reply_to` property, so workers send their results and progress reports to
    /// it and nothing needs binding.
    private func declareReplyQueue() throws -> String {
        if let replyQueue { return replyQueue }
        try connection.openChannel(Self.replyChannel)
        let queue = try connection.declareQueue(
            "", durable: false, exclusive: true, autoDelete: true, channel: Self.replyChannel
        ).name
        try connection.consume(queue, noAck: true, channel: Self.replyChannel)
        replyQueue = queue
        return queue
    }

    func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties, mandatory: Bool = false
    ) throws {
        try connection.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, mandatory: mandatory,
            channel: Self.publishChannel)
        publishCount += 1
    }

    /// Throws if the broker returned job publishes since the last check (no queue took them), and forgets that
    /// their queues were declared, so that the next enqueue declares them again.
    private func checkNothingReturned() throws {
        guard let queue = returnedQueues.first else { return }
        let count = returnedQueues.count
        returnedQueues = []
        declaredQueues = []
        throw WarrenError(
            .queueUnreachable,
            "the broker took \(count) job\(count == 1 ? "" : "s") for queue '\(queue)' nowhere (basic.return): the queue "
                + "was deleted, or is on a cluster node that is down; \(count == 1 ? "it was" : "they were") not enqueued")
    }

    /// Takes out of the returned publishes' queues the ones that match `isIncluded`.
    func takeReturnedQueues(where isIncluded: (String) -> Bool) -> Set<String> {
        let taken = Set(returnedQueues.filter(isIncluded))
        returnedQueues.removeAll(where: isIncluded)
        return taken
    }

    /// Waits for the broker's answer to every publish so far, and throws if it refused any.
    private func waitForConfirms() throws {
        guard try waitForAnswers().isEmpty else {
            throw WarrenError(.broker, "the broker refused a published message (basic.nack)")
        }
    }

    /// Waits for the broker's answer to every publish so far, and returns the numbers of those it refused
    /// (`basic.nack`) since the last wait.
    func waitForAnswers() throws -> Set<UInt64> {
        let deadline = ContinuousClock.now + .seconds(30)
        try readEvents(until: deadline) { confirmedCount >= publishCount }
        guard confirmedCount >= publishCount else {
            let count = publishCount - confirmedCount
            throw WarrenError(
                .timeout,
                "the broker did not confirm \(count) message\(count == 1 ? "" : "s") within 30 s "
                    + "(\(WarrenError.unconfirmedCauses)): what was sent may still take effect once it reads it")
        }
        defer { refusedPublishes = [] }
        return refusedPublishes
    }

    /// Takes in the broker's answer to the publishes up to `tag` (`multiple`) or to `tag` alone.
    private func answered(upTo tag: UInt64, multiple: Bool, ack: Bool) {
        let numbers = multiple ? Array((confirmedCount + 1)...max(tag, confirmedCount)) : [tag]
        for number in numbers where !confirmedAhead.contains(number) {
            if !ack { refusedPublishes.insert(number) }
            confirmedAhead.insert(number)
        }
        while confirmedAhead.remove(confirmedCount + 1) != nil { confirmedCount += 1 }
    }

    /// Reads broker events until `done()` or `deadline`; deliveries that are not results go to `other`.
    private func readEvents(
        until deadline: ContinuousClock.Instant, done: () -> Bool, other: (Delivery) -> Void = { _ in }
    ) throws {
        while !done() {
            guard let event = try connection.nextEvent() else {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return }
                connection.waitForActivity(wakeUp: nil, timeout: min(left, .seconds(1)))
                continue
            }
            switch event {
            case .confirm(_, let tag, let multiple, let ack):
                answered(upTo: tag, multiple: multiple, ack: ack)
            case .delivery(let delivery) where delivery.channel == Self.replyChannel:
                if delivery.properties.type == ProgressMessage.messageType {
                    if let report = try? ProgressMessage.decode(delivery.body) {
                        // Reports of jobs nobody waits for yet are kept, but only the newest thousand.
                        arrivedProgress.append(report)
                        if arrivedProgress.count > 1000 { arrivedProgress.removeFirst(arrivedProgress.count - 1000) }
                    }
                } else if let result = try? JobResult.decode(delivery.body) {
                    watched.keep(result)
                }
            case .delivery(let delivery):
                other(delivery)
            case .returned(Self.publishChannel, _, _, _, let routingKey, _):
                returnedQueues.append(routingKey)
            case .channelClosed(let error):
                throw error
            default:
                break
            }
        }
    }
}
