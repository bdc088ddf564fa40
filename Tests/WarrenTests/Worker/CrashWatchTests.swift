import Foundation
import Testing

@testable import Warren

@Suite("CrashWatch")
struct CrashWatchTests {
    private func watch() -> CrashWatch {
        CrashWatch(
            configuration: WorkerParts.configuration(), broker: "b", logger: WorkerParts.logger,
            metrics: WorkerMetrics(operationTypes: []))
    }

    @Test func aReportedJobThatHasNotStartedGoesBackToRunAloneAndAParkedOneWillRunAlone() {
        let crashes = watch()
        let waiting = WorkerParts.job("waiting")
        let parked = WorkerParts.job("parked")
        parked.waitingOn = ["x"]
        let report = ControlMessage.crashed(jobIDs: ["waiting", "parked"], worker: "dead", journal: "journal-1")
        crashes.crashReported(report, jobs: ["waiting": waiting, "parked": parked])
        #expect(waiting.runsAlone && waiting.operation.job.cancellation?.reason == "crashSuspect")
        #expect(parked.runsAlone && !parked.operation.job.isCancelled)
        let deaths = crashes.deaths(of: waiting.descriptor, waiting.delivery)
        #expect(deaths.map(\.worker) == ["dead"] && deaths[0].alone == false)
        #expect(crashes.runsAlone(waiting.descriptor, waiting.delivery, deaths: deaths))
        // A report read twice counts once.
        crashes.crashReported(report, jobs: [:])
        #expect(crashes.deaths(of: waiting.descriptor, waiting.delivery).count == 1)
    }

    @Test func deathsBeforeTheJobWasRequeuedByHandDoNotCount() {
        let crashes = watch()
        let job = WorkerParts.job("j")
        crashes.crashReported(.crashed(jobIDs: ["j"], worker: "dead", journal: "t"), jobs: [:])
        let later = Int64((Date().timeIntervalSince1970 + 60) * 1000)
        let requeued = WorkerParts.delivery(
            properties: .init(headers: [Topology.requeuedAtHeader: .int(later)]))
        #expect(crashes.deaths(of: job.descriptor, requeued).isEmpty)
        #expect(!crashes.runsAlone(job.descriptor, requeued, deaths: []))
    }

    @Test func aWorkerWithoutAJournalDirectoryKeepsNoJournal() throws {
        let crashes = watch()
        #expect(crashes.journal == nil)
        try crashes.findDeadWorkers(publish: { _ in Issue.record("nothing to report") })
    }
}
