import AMQP
import Foundation

/// A producer's enqueueing: checks a call's jobs, takes their unique locks, publishes them in dependency order with
/// confirms, and deals with what the broker refuses or returns (``Producer/enqueue(_:watch:)-([JobRequest],_)``).
///
/// Refused jobs are sent again for a while; jobs that can never start, depending on one the broker did not take,
/// are cancelled; a job that supersedes its key's older jobs does so once the broker took it.
///
/// Thread safety: confined to the thread of its ``Producer``.
final class JobEnqueuer {
    let link: ProducerConnection
    private let sequences: SequenceFile
    private let journal: JobJournal
    private let locks: UniqueLocks
    private let control: ControlClient
    private let results: ResultWatcher
    private let interruption: Producer.Interruption
    /// Whether job queues this producer creates are priority queues.
    let priorityQueues: Bool
    /// Whether job queues this producer creates are quorum queues.
    let quorumQueues: Bool
    var declaredQueues: Set<String> = []
    /// Reply queues (``JobRequest/replyTo``) seen to exist: a result sent to a missing one would be lost.
    var knownReplyQueues: Set<String> = []

    init(
        link: ProducerConnection, sequences: SequenceFile, journal: JobJournal, locks: UniqueLocks,
        control: ControlClient, results: ResultWatcher, interruption: Producer.Interruption, priorityQueues: Bool,
        quorumQueues: Bool
    ) {
        self.link = link
        self.sequences = sequences
        self.journal = journal
        self.locks = locks
        self.control = control
        self.results = results
        self.interruption = interruption
        self.priorityQueues = priorityQueues
        self.quorumQueues = quorumQueues
    }

    private var metrics: ProducerMetrics { link.metrics }

    /// Publishes jobs and returns their descriptors once the broker confirmed all of them
    /// (``Producer/enqueue(_:watch:)-([JobRequest],_)``, which says what it throws).
    func enqueue(_ requests: [JobRequest], watch: Bool) throws -> [OperationDescriptor] {
        guard !requests.isEmpty else { return [] }
        let dependent = requests.contains { !$0.dependencies.isEmpty }
        let checked = requests.filter { $0.checksDependencies && !$0.dependencies.isEmpty }
        let outside = checked.isEmpty ? [] : Set(checked.flatMap(\.dependencies)).subtracting(requests.map(\.id))
        let ordered = try DependencyGraph.ordered(requests, known: try journal.known(outside))
        if watch, let request = requests.first(where: { $0.replyTo != nil }) {
            throw WarrenError(
                .invalidConfiguration,
                "job \(request.id) names reply queue '\(request.replyTo!)'; a watched job's result goes to the producer's own"
            )
        }
        let descriptors: [OperationDescriptor] = try link.brokerCall {
            if let problem = Self.problem(with: ordered) {
                throw WarrenError(.invalidConfiguration, problem)
            }
            try checkReplyQueuesExist(ordered)
            try checkNoStreams(ordered)
            let replyTo = watch ? try results.declaredReplyQueue() : nil
            let locked = try locks.take(of: ordered)
            var published = false
            // Locks of jobs sure not to be enqueued are released; after a lost connection they expire.
            do {
                return try publishJobs(ordered, replyTo: replyTo, locked: locked, published: &published)
            } catch  where !published && (error as? WarrenError)?.code != .interrupted {
                // (An interrupted call released the locks of the jobs it did not send.)
                try? locks.release(of: locked)
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
        link.connection.holdOutput()
        defer { link.connection.flushOutput() }
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
                if replyTo != nil { results.watch(request.id) }
            }
            link.connection.flushOutput()
            let refused = try link.waitForAnswers().sorted().compactMap { numbers[$0] }
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
                metrics.refused(queue: jobs[index].request.queue)
                throw tooLarge(
                    jobs[index].request, size: jobs[index].body.count, limit: limit, in: ordered, at: index,
                    locked: locked)
            }
            try? journal.retract(ordered.dropFirst(handed).map(\.id))
            if error.replyCode == 403, error.replyText?.contains("exchange 'amq.default'") == true {
                // Every job goes through the default exchange, which this user may not write to: none was taken.
                try? journal.retract(ordered.prefix(handed).map(\.id))
                try? locks.release(of: locked)
                count(ordered.prefix(handed), as: metrics.refused)
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
        let returned = Set(link.returnedQueues)
        let unsent = ordered.dropFirst(handed).map(\.id)
        let lost = Set(
            refusedJobs.map(\.id) + ordered.prefix(handed).filter { returned.contains($0.queue) }.map(\.id) + unsent)
        if !lost.isEmpty {
            try? locks.release(of: locked.filter { lost.contains($0.id) })
            // Not enqueued after all: a later dependent of theirs is refused as unknown, not parked for ever.
            try? journal.retract(ordered.map(\.id).filter(lost.contains))
        }
        let enqueued = ordered.map(\.id).filter { !lost.contains($0) }
        count(ordered.filter { !lost.contains($0.id) }, as: metrics.enqueued)
        count(ordered.prefix(handed).filter { lost.contains($0.id) }, as: metrics.refused)
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
        let named =
            "; the \(stranded.count) enqueued job(s) depending on them (\(Self.jobs(stranded))) could never start"
        try? locks.release(of: locked.filter { stranded.contains($0.id) })
        do {
            try control.cancel(jobIDs: stranded)
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
        try link.publish(
            job.body, exchange: "", routingKey: job.request.queue, properties: job.properties, mandatory: true,
            job: job.request.queue)
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
        try? locks.release(of: locked.filter { notEnqueued.contains($0.id) })
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
        for queue in Set(refused.map(\.request.queue))
        where try Topology.isKnownClassicQueue(queue, on: link.connection) {
            classic.insert(queue)
        }
        let full = refused.filter { classic.contains($0.request.queue) }
        var refused = refused.filter { !classic.contains($0.request.queue) }
        guard !refused.isEmpty else { return (full, 1) }
        var sends = 1
        for wait in Self.refusalRetryWaits where !refused.isEmpty && !interruption.isRequested {
            Thread.sleep(forTimeInterval: wait / .seconds(1))
            sends += 1
            try link.reopenPublishChannel()
            var numbers: [UInt64: SentJob] = [:]
            for job in refused { numbers[try send(job)] = job }
            link.connection.flushOutput()
            refused = try link.waitForAnswers().sorted().compactMap { numbers[$0] }
        }
        // The next call starts on a channel the broker has not refused.
        if !refused.isEmpty { try link.reopenPublishChannel() }
        return (full + refused, sends)
    }

    /// Cancels the jobs of each key of `descriptors` (superseding jobs the broker confirmed) older than its job:
    /// only once the new job is enqueued, so that a job the broker refuses supersedes nothing.
    /// - Throws: ``WarrenError`` naming the `enqueued` jobs, when the control message does not get through: the
    ///   older jobs run on.
    private func supersede(for descriptors: [OperationDescriptor], enqueued: [String]) throws {
        let superseding = descriptors.filter { $0.key != nil }
        guard !superseding.isEmpty else { return }
        do {
            try control.send(superseding.map { .supersede(key: $0.key!, before: $0.sequence) })
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

    /// Throws if the broker returned job publishes since the last check (no queue took them), and forgets that
    /// their queues were declared, so that the next enqueue declares them again.
    private func checkNothingReturned() throws {
        let returned = link.takeReturnedQueues()
        guard let queue = returned.first else { return }
        let count = returned.count
        declaredQueues = []
        throw WarrenError(
            .queueUnreachable,
            "the broker took \(count) job\(count == 1 ? "" : "s") for queue '\(queue)' nowhere (basic.return): the queue "
                + "was deleted, or is on a cluster node that is down; \(count == 1 ? "it was" : "they were") not enqueued"
        )
    }

    /// Counts `requests` with `record`, once per queue.
    private func count(_ requests: some Sequence<JobRequest>, as record: (String, Int) -> Void) {
        var counts: [String: Int] = [:]
        for request in requests { counts[request.queue, default: 0] += 1 }
        for (queue, count) in counts { record(queue, count) }
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
}
