import AMQP
import Foundation
import Logging

/// Jobs that kill their worker process (a crash, the out-of-memory killer, `kill -9`).
///
/// The broker redelivers what a dead worker held, and a job that kills every worker it runs on would go round
/// for good, taking the jobs that ran beside it down each time. So each worker records the jobs it executes in a
/// journal (``CrashJournal``); a worker of the same broker started with the same state directory finds the journal
/// of one that died and reports its executing jobs on the control stream, which every worker reads
/// (``CrashTally``); so does a live one, when the broker redelivers it a job. A job reported once runs alone when it
/// comes back: the worker lets what it runs finish, starts nothing beside it, and goes on once it ended, so that the
/// deaths counted for it are its own. A job reported ``Worker/Configuration/maxCrashes`` times, once at least while
/// it was the only job executing, is dead-lettered (`crashedWorker`) with a `failed` result instead.
extension WorkerSession {
    /// Opens this worker's crash journal, for the broker `connection` leads to.
    static func openJournal(
        _ configuration: Worker.Configuration, connection: AMQPConnection, logger: Logger
    ) -> (journal: CrashJournal?, broker: String) {
        let clusterName =
            connection.serverProperties["cluster_name"]?.stringValue
            ?? "\(connection.configuration.host):\(connection.configuration.port)"
        let broker = CrashJournal.brokerIdentity(
            clusterName: clusterName, virtualHost: connection.configuration.virtualHost)
        guard let directory = configuration.crashJournalDirectory else { return (nil, broker) }
        do {
            let slots = configuration.localQueues.values.reduce(0, +)
            let journal = try CrashJournal(
                directory: directory, broker: broker, workerID: configuration.workerID, slots: slots)
            return (journal, broker)
        } catch {
            logger.warning(
                "running without a crash journal: this worker's death would not be reported",
                metadata: ["error": "\(error)"])
            return (nil, broker)
        }
    }

    /// Takes the journals of this broker's workers that died beside this one, counts their deaths and reports them:
    /// at start-up, and when the broker redelivers a job (`afterRedelivery`, at most every 100 ms: after a broker
    /// restart every job comes back redelivered), which may come from a worker that just died. Notes the jobs other
    /// workers' journals hold (``jobsInOtherJournals``): such a job, redelivered, runs alone too, since another
    /// worker may have taken the dead one's journal first.
    func findDeadWorkers(afterRedelivery: Bool = false) throws {
        guard let directory = configuration.crashJournalDirectory else { return }
        if afterRedelivery {
            let now = ContinuousClock.now
            if let last = lastJournalLook, now - last < .milliseconds(100) { return }
            lastJournalLook = now
        }
        let look = CrashJournal.look(
            in: directory, broker: journalBroker, own: journal?.id, ignoring: &ignoredJournalFiles)
        jobsInOtherJournals = look.busy
        for orphan in look.orphans {
            // Reported and stored already (its reporter died before it removed it, or its directory is read-only).
            if let job = orphan.jobs.first, crashTally[job.id].contains(where: { $0.journal == orphan.id }) {
                if !orphan.discard() { ignoredJournalFiles.insert("\(orphan.id).\(CrashJournal.fileExtension)") }
                continue
            }
            logger.warning(
                "a worker died while executing jobs; reporting them",
                metadata: [
                    "deadWorker": "\(orphan.workerID)",
                    "jobs": .array(orphan.jobs.map { "\($0.id) (\($0.type))" }),
                ])
            crashTally.record(report(of: orphan))
            orphans.append(orphan)
            if isConsuming { try publish(report(of: orphan)) }
        }
    }

    /// Publishes a `crashed` report for each dead worker's journal not yet read back from the control stream (this
    /// worker counts them already).
    func reportCrashes() throws {
        for orphan in orphans { try publish(report(of: orphan)) }
    }

    private func report(of orphan: CrashJournal.Orphan) -> ControlMessage {
        ControlMessage.crashed(jobIDs: orphan.jobs.map(\.id), worker: orphan.workerID, journal: orphan.id)
    }

    private func publish(_ report: ControlMessage) throws {
        _ = try publish(
            try report.encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true))
    }

    /// Counts a `crashed` report; one read back from the stream is stored there, and its journal goes a while later
    /// (``discardReportedJournals(all:)``). A job it names that this worker holds and has not started (it came
    /// before the report, from a neighbour of the dead worker) is sent back to the broker, to come back and run
    /// alone; a parked one will run alone.
    func crashReported(_ report: ControlMessage) {
        crashTally.record(report)
        if let index = orphans.firstIndex(where: { $0.id == report.token }) {
            reportedJournals.append((orphans.remove(at: index), .now))
            metrics.deadWorkerReported()
        }
        for jobID in report.jobIDs {
            guard let job = inFlight[jobID], !job.runsAlone, !job.operation.hasStarted else { continue }
            job.runsAlone = true
            guard parked[jobID] == nil else { continue }
            job.operation.job.logger.info("sending the job back to the broker, to run alone: a worker died while it ran it")
            job.operation.cancel(
                Cancellation(reason: "crashSuspect", message: "a worker died while the job executed there"))
        }
    }

    /// Removes the journals whose reports are stored: those reported 10 s ago or more, or `all`. Until then a
    /// neighbour that gets one of their jobs redelivered, later than this worker learnt of the death, still finds
    /// the job in a journal this process holds, and runs it alone.
    func discardReportedJournals(all: Bool = false) {
        guard !reportedJournals.isEmpty else { return }
        let now = ContinuousClock.now
        reportedJournals.removeAll { journal, reportedAt in
            guard all || now - reportedAt >= .seconds(10) else { return false }
            journal.discard()
            return true
        }
    }

    /// The deaths counted for the job `delivery` brings: those reported after `warren dead requeue` last sent it
    /// back, if it did.
    func deaths(of descriptor: OperationDescriptor, _ delivery: Delivery) -> [CrashTally.Death] {
        let deaths = crashTally[descriptor.id]
        guard !deaths.isEmpty, let requeuedAt = Self.requeuedAt(of: delivery) else { return deaths }
        return deaths.filter { ($0.reportedAt ?? .distantPast) > requeuedAt }
    }

    /// Why a job whose worker processes died at `deaths` is not run again, or `nil`: `maxCrashes` deaths, once at
    /// least while it was the only job executing, so that deaths it only shared with others never condemn it.
    func crashedWorkerError(_ deaths: [CrashTally.Death]) -> JobError? {
        guard deaths.count >= configuration.maxCrashes, deaths.contains(where: \.alone) else { return nil }
        let workers = deaths.sorted { ($0.reportedAt ?? .distantPast) < ($1.reportedAt ?? .distantPast) }
            .map(\.worker).joined(separator: ", ")
        return JobError(
            code: "crashedWorker",
            message: "the job was executing in \(deaths.count) worker processes when they died (\(workers)); "
                + "it is not run again (at most \(configuration.maxCrashes))")
    }

    /// Hands `job` to its local queue with the others of this turn or, if it runs alone, to the line of jobs that
    /// wait for the worker to be idle; a job of a rate-limited type first waits for its turn (unless `throttling`
    /// is `false`: its turn came).
    func queueOperation(of job: InFlightJob, throttling: Bool = true) {
        if throttling, waitsForItsTurn(job) { return }
        if job.runsAlone {
            aloneJobs.append(job)
        } else {
            job.isQueued = true
            operationsToQueue[job.localQueue, default: []].append(job.operation)
        }
    }

    /// Whether the jobs of this turn wait: a job that runs alone is running or waits for the worker to be idle.
    /// Starts the next such job once nothing else can run: no job queued but those held back.
    func holdsJobsForAloneJob() -> Bool {
        guard aloneJobRuns || !aloneJobs.isEmpty else { return false }
        guard !aloneJobRuns else { return true }
        let heldBack = Set(operationsToQueue.values.joined().map(ObjectIdentifier.init))
        if !inFlight.values.contains(where: { $0.isQueued && !heldBack.contains(ObjectIdentifier($0.operation)) }) {
            let job = aloneJobs.removeFirst()
            let dead = deaths(of: job.descriptor, job.delivery)
            if dead.isEmpty {
                // A journal on this host names it: a process that lost its connection, or died unreported so far.
                job.operation.job.logger.warning(
                    """
                    running the job alone: a worker process on this host that lost its connection, or died, was \
                    executing it
                    """)
            } else {
                job.operation.job.logger.warning(
                    "running the job alone: it was executing when a worker died",
                    metadata: ["deadWorkers": .array(dead.map { "\($0.worker)" })])
            }
            job.isQueued = true
            aloneJobRuns = true
            metrics.jobRanAlone()
            localQueues[job.localQueue]!.add(job.operation)
        }
        return true
    }

    /// `job` ended or went: the next job that runs alone may start, or the jobs held for one.
    func aloneJobEnded(_ job: InFlightJob) {
        guard job.runsAlone else { return }
        if job.isQueued {
            aloneJobRuns = false
        } else {
            aloneJobs.removeAll { $0 === job }
        }
    }
}
