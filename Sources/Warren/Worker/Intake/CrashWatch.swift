import AMQP
import Foundation
import Logging

/// Jobs that kill their worker process (a crash, the out-of-memory killer, `kill -9`).
///
/// The broker redelivers what a dead worker held, and a job that kills every worker it runs on would go round for
/// good, taking the jobs that ran beside it down each time. So each worker records the jobs it executes in a
/// journal (``CrashJournal``); a worker of the same broker started with the same state directory finds the journal
/// of one that died and reports its executing jobs on the control stream, which every worker reads
/// (``CrashTally``); so does a live one, when the broker redelivers it a job. A job reported once runs alone when it
/// comes back (``RunAloneGate``). A job reported ``Worker/Configuration/maxCrashes`` times, once at least while it
/// was the only job executing, is refused (``JobIntake/crashedWorkerError(_:)``).
/// Thread safety: confined to the worker's broker thread.
final class CrashWatch {
    /// This worker's journal, if it keeps one.
    let journal: CrashJournal?
    private let directory: String?
    /// How the journal names the broker.
    private let broker: String
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Journals of dead workers, until their `crashed` reports are read back from the control stream; then for a
    /// while longer, with when that was.
    private var orphans: [CrashJournal.Orphan] = []
    private var reportedJournals: [(CrashJournal.Orphan, ContinuousClock.Instant)] = []
    /// Files of the journal directory that are no journals of this broker's workers; when it was last looked at.
    private var ignoredJournalFiles: Set<String> = []
    private var lastJournalLook: ContinuousClock.Instant?
    /// The jobs other live processes' journals held at that look.
    private var jobsInOtherJournals: Set<String> = []
    /// Jobs that were executing when workers died, from the control stream.
    private var tally = CrashTally()

    /// Opens this worker's crash journal, for the broker `broker` names (``brokerIdentity(of:)``).
    init(configuration: Worker.Configuration, broker: String, logger: Logger, metrics: WorkerMetrics) {
        self.logger = logger
        self.metrics = metrics
        self.broker = broker
        directory = configuration.crashJournalDirectory
        guard let directory else {
            journal = nil
            return
        }
        do {
            let slots = configuration.localQueues.values.reduce(0, +)
            journal = try CrashJournal(
                directory: directory, broker: broker, workerID: configuration.workerID, slots: slots)
        } catch {
            logger.warning(
                "running without a crash journal: this worker's death would not be reported",
                metadata: ["error": "\(error)"])
            journal = nil
        }
    }

    /// How journals name the broker `connection` leads to: its cluster, and the virtual host.
    static func brokerIdentity(of connection: AMQPConnection) -> String {
        let clusterName =
            connection.serverProperties["cluster_name"]?.stringValue
            ?? "\(connection.configuration.host):\(connection.configuration.port)"
        return CrashJournal.brokerIdentity(clusterName: clusterName, virtualHost: connection.configuration.virtualHost)
    }

    /// Takes the journals of this broker's workers that died beside this one, counts their deaths and reports them
    /// with `publish` (when given): at start-up, and when the broker redelivers a job (`afterRedelivery`, at most
    /// every 100 ms: after a broker restart every job comes back redelivered), which may come from a worker that
    /// just died. Notes the jobs other workers' journals hold: such a job, redelivered, runs alone too, since
    /// another worker may have taken the dead one's journal first.
    func findDeadWorkers(afterRedelivery: Bool = false, publish: ((ControlMessage) throws -> Void)?) throws {
        guard let directory else { return }
        if afterRedelivery {
            let now = ContinuousClock.now
            if let last = lastJournalLook, now - last < .milliseconds(100) { return }
            lastJournalLook = now
        }
        let look = CrashJournal.look(in: directory, broker: broker, own: journal?.id, ignoring: &ignoredJournalFiles)
        jobsInOtherJournals = look.busy
        for orphan in look.orphans {
            // Reported and stored already (its reporter died before it removed it, or its directory is read-only).
            if let job = orphan.jobs.first, tally[job.id].contains(where: { $0.journal == orphan.id }) {
                if !orphan.discard() { ignoredJournalFiles.insert("\(orphan.id).\(CrashJournal.fileExtension)") }
                continue
            }
            logger.warning(
                "a worker died while executing jobs; reporting them",
                metadata: [
                    "deadWorker": "\(orphan.workerID)",
                    "jobs": .array(orphan.jobs.map { "\($0.id) (\($0.type))" }),
                ])
            tally.record(Self.report(of: orphan))
            orphans.append(orphan)
            try publish?(Self.report(of: orphan))
        }
    }

    /// The `crashed` reports of the dead workers' journals not yet read back from the control stream (this worker
    /// counts them already): to publish again on a new connection.
    var unconfirmedReports: [ControlMessage] { orphans.map(Self.report(of:)) }

    private static func report(of orphan: CrashJournal.Orphan) -> ControlMessage {
        ControlMessage.crashed(jobIDs: orphan.jobs.map(\.id), worker: orphan.workerID, journal: orphan.id)
    }

    /// Counts a `crashed` report; one read back from the stream is stored there, and its journal goes a while later
    /// (``discardReportedJournals(all:)``). A job it names that `jobs` holds and has not started (it came before
    /// the report, from a neighbour of the dead worker) is sent back to the broker, to come back and run alone; a
    /// parked one will run alone.
    func crashReported(_ report: ControlMessage, jobs: [String: InFlightJob]) {
        tally.record(report)
        if let index = orphans.firstIndex(where: { $0.id == report.token }) {
            reportedJournals.append((orphans.remove(at: index), .now))
            metrics.deadWorkerReported()
        }
        for jobID in report.jobIDs {
            guard let job = jobs[jobID], !job.runsAlone, !job.operation.hasStarted else { continue }
            job.runsAlone = true
            guard !job.isParked else { continue }
            job.operation.job.logger.info(
                "sending the job back to the broker, to run alone: a worker died while it ran it")
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
        let deaths = tally[descriptor.id]
        guard !deaths.isEmpty, let requeuedAt = delivery.requeuedAt else { return deaths }
        return deaths.filter { ($0.reportedAt ?? .distantPast) > requeuedAt }
    }

    /// Whether the job of `delivery`, counted dead at `deaths`, runs alone: a worker died while it executed, or a
    /// journal of another process on this host names it.
    func runsAlone(_ descriptor: OperationDescriptor, _ delivery: Delivery, deaths: [CrashTally.Death]) -> Bool {
        !deaths.isEmpty || (delivery.redelivered && jobsInOtherJournals.contains(descriptor.id))
    }

    /// The worker stops: its journal says so, so that its executing jobs do not count as crashes.
    func stopping() {
        journal?.markStopping()
    }

    /// The worker stopped: its journal closes, and the journals it reported go.
    func close() {
        journal?.close()
        discardReportedJournals(all: true)
    }
}
