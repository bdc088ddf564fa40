import Foundation
import Testing

@testable import Warren

/// The crash journal's file, read as the next worker reads it. A worker that dies leaves its file unlocked; here a
/// copy of a live journal's file stands for it (the copy is not locked, the original is).
@Suite("CrashJournal")
struct CrashJournalTests {
    private let broker = CrashJournal.brokerIdentity(clusterName: "rabbit@host-1", virtualHost: "/")
    private func orphans(in directory: String, broker: String? = nil) -> [CrashJournal.Orphan] {
        var ignoring = Set<String>()
        return CrashJournal.look(in: directory, broker: broker ?? self.broker, own: nil, ignoring: &ignoring).orphans
    }

    /// Copies the journal's file under a new journal name, as the file of a worker that died with that content.
    private func deadCopy(of journal: CrashJournal, in directory: String) throws -> String {
        let id = UUID().uuidString.lowercased()
        try FileManager.default.copyItem(atPath: journal.path, toPath: "\(directory)/\(id).journal")
        return id
    }

    @Test func aLiveWorkersJournalIsNoOrphan() throws {
        let directory = try TemporaryDirectory()
        let journal = try CrashJournal(directory: directory.path, broker: broker, workerID: "w1", slots: 2)
        _ = journal.began(jobID: "job-1", type: "sum")
        #expect(orphans(in: directory.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: journal.path))
    }

    @Test func aDeadWorkersJournalNamesTheJobsThatWereExecuting() throws {
        let directory = try TemporaryDirectory()
        let journal = try CrashJournal(directory: directory.path, broker: broker, workerID: "host-42", slots: 2)
        let first = try #require(journal.began(jobID: "job-1", type: "sum"))
        _ = journal.began(jobID: "job-2", type: "resize\timage")
        journal.ended(first)
        _ = journal.began(jobID: "job-3", type: "echo")
        let id = try deadCopy(of: journal, in: directory.path)

        let found = orphans(in: directory.path)
        #expect(found.map(\.id) == [id])
        let orphan = try #require(found.first)
        #expect(orphan.workerID == "host-42")
        #expect(orphan.jobs.map(\.id).sorted() == ["job-2", "job-3"])
        #expect(orphan.jobs.first { $0.id == "job-2" }?.type == "resize\timage")
        // Taken by this process until discarded: another look sees its jobs as busy, and does not take it.
        var ignoring = Set<String>()
        let again = CrashJournal.look(in: directory.path, broker: broker, own: journal.id, ignoring: &ignoring)
        #expect(again.orphans.isEmpty)
        #expect(again.busy == ["job-2", "job-3"])
        orphan.discard()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path) == [
                URL(fileURLWithPath: journal.path).lastPathComponent
            ])
    }

    @Test func anOrphanReleasedUnreportedIsFoundAgain() throws {
        let directory = try TemporaryDirectory()
        let journal = try CrashJournal(directory: directory.path, broker: broker, workerID: "w1", slots: 1)
        _ = journal.began(jobID: "job-1", type: "sum")
        _ = try deadCopy(of: journal, in: directory.path)
        do {
            let found = orphans(in: directory.path)
            #expect(found.count == 1)
        }
        #expect(
            orphans(in: directory.path).map { $0.jobs.map(\.id) } == [["job-1"]], "its reporter let it go: taken again")
    }

    @Test func aJournalOfAnotherBrokerIsLeftForItsWorkers() throws {
        let directory = try TemporaryDirectory()
        let elsewhere = CrashJournal.brokerIdentity(clusterName: "rabbit@host-1", virtualHost: "other")
        let journal = try CrashJournal(directory: directory.path, broker: elsewhere, workerID: "w1", slots: 1)
        _ = journal.began(jobID: "job-1", type: "sum")
        let id = try deadCopy(of: journal, in: directory.path)
        #expect(orphans(in: directory.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: "\(directory.path)/\(id).journal"))
        #expect(orphans(in: directory.path, broker: elsewhere).map(\.id) == [id])
    }

    @Test func filesOfOtherBrokersAreReadOnceThenPassedOver() throws {
        let directory = try TemporaryDirectory()
        let elsewhere = CrashJournal.brokerIdentity(clusterName: "rabbit@host-2", virtualHost: "/")
        let foreign = try CrashJournal(directory: directory.path, broker: elsewhere, workerID: "w1", slots: 1)
        _ = foreign.began(jobID: "job-1", type: "sum")
        let foreignID = try deadCopy(of: foreign, in: directory.path)
        let journal = try CrashJournal(directory: directory.path, broker: broker, workerID: "w2", slots: 1)
        _ = journal.began(jobID: "job-2", type: "sum")
        var ignoring = Set<String>()
        let first = CrashJournal.look(in: directory.path, broker: broker, own: nil, ignoring: &ignoring)
        #expect(first.orphans.isEmpty)
        #expect(first.busy == ["job-2"], "a live worker's jobs")
        #expect(ignoring == ["\(foreignID).journal", URL(fileURLWithPath: foreign.path).lastPathComponent])
        let ownID = try deadCopy(of: journal, in: directory.path)
        let second = CrashJournal.look(in: directory.path, broker: broker, own: journal.id, ignoring: &ignoring)
        #expect(second.orphans.map(\.id) == [ownID])
        #expect(second.busy.isEmpty, "its own journal is left out")
    }

    @Test func aLongBrokerNameAndWorkerIDAreCutNotMixedUp() throws {
        let directory = try TemporaryDirectory()
        let long = CrashJournal.brokerIdentity(clusterName: String(repeating: "c", count: 300), virtualHost: "/")
        let journal = try CrashJournal(
            directory: directory.path, broker: long, workerID: String(repeating: "w", count: 300), slots: 1)
        _ = journal.began(jobID: "job-1", type: "sum")
        _ = try deadCopy(of: journal, in: directory.path)
        #expect(orphans(in: directory.path, broker: long).first?.jobs.map(\.id) == ["job-1"])
    }

    @Test func theJournalGrowsPastItsSlots() throws {
        let directory = try TemporaryDirectory()
        let journal = try CrashJournal(directory: directory.path, broker: broker, workerID: "w1", slots: 1)
        let slots = (1...5).compactMap { journal.began(jobID: "job-\($0)", type: "sum") }
        #expect(Set(slots).count == 5)
        _ = try deadCopy(of: journal, in: directory.path)
        #expect(orphans(in: directory.path).first?.jobs.map(\.id).sorted() == (1...5).map { "job-\($0)" })
    }

    @Test func aWorkerThatDiedIdleOrStoppingLeavesNothingToReport() throws {
        let directory = try TemporaryDirectory()
        let idle = try CrashJournal(directory: directory.path, broker: broker, workerID: "idle", slots: 1)
        let slot = try #require(idle.began(jobID: "job-1", type: "sum"))
        idle.ended(slot)
        let idleCopy = try deadCopy(of: idle, in: directory.path)
        let stopping = try CrashJournal(directory: directory.path, broker: broker, workerID: "stopping", slots: 1)
        _ = stopping.began(jobID: "job-2", type: "sum")
        stopping.markStopping()
        let stoppingCopy = try deadCopy(of: stopping, in: directory.path)

        #expect(orphans(in: directory.path).isEmpty)
        for id in [idleCopy, stoppingCopy] {
            #expect(!FileManager.default.fileExists(atPath: "\(directory.path)/\(id).journal"), "removed")
        }
    }

    @Test func closingRemovesTheFileAndLaterRecordsAreIgnored() throws {
        let directory = try TemporaryDirectory()
        let journal = try CrashJournal(directory: directory.path, broker: broker, workerID: "w1", slots: 1)
        let slot = try #require(journal.began(jobID: "job-1", type: "sum"))
        journal.close()
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        journal.ended(slot)
        #expect(journal.began(jobID: "job-2", type: "sum") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func anOperationIsInTheJournalWhileItsCodeRunsAndOnlyThen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path
        let journal = try CrashJournal(directory: path, broker: broker, workerID: "w1", slots: 1)
        let collector = ReportCollector()
        let operation = JobOperation(
            job: TestJobs.context(id: "job-1"), input: .null,
            body: .blocking({ _, _ in
                try FileManager.default.copyItem(atPath: journal.path, toPath: path + "/running.journal")
                return .null
            }), journal: journal, report: collector.report)
        LocalQueue(name: "test", width: 1).add(operation)
        #expect(try await collector.waitForReport(of: "job-1").outcome.output == .null)
        try FileManager.default.copyItem(atPath: journal.path, toPath: path + "/ended.journal")

        let found = orphans(in: path)
        #expect(found.map(\.id) == ["running"])
        #expect(found.first?.jobs.map(\.id) == ["job-1"])
    }

    @Test func filesThatAreNoJournalsAreLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let stranger = "\(directory.path)/notes.journal"
        try Data("not a journal".utf8).write(to: URL(fileURLWithPath: stranger))
        #expect(orphans(in: directory.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: stranger))
        #expect(orphans(in: directory.path + "/missing").isEmpty)
    }

    @Test func aDirectoryThatCannotBeCreatedIsAClearError() throws {
        let directory = try TemporaryDirectory()
        let file = "\(directory.path)/file"
        try Data().write(to: URL(fileURLWithPath: file))
        let error = #expect(throws: WarrenError.self) {
            try CrashJournal(directory: file + "/workers", broker: broker, workerID: "w1", slots: 1)
        }
        #expect(error?.code == .system)
        #expect(error?.message.contains(file + "/workers") == true)
    }
}

@Suite("CrashTally")
struct CrashTallyTests {
    @Test func eachJournalCountsOnceHoweverOftenItIsReported() {
        var tally = CrashTally()
        let report = ControlMessage.crashed(jobIDs: ["a", "b"], worker: "w1", journal: "j1")
        tally.record(report)
        tally.record(report)
        tally.record(ControlMessage.crashed(jobIDs: ["a"], worker: "w2", journal: "j2"))
        #expect(tally["a"].map(\.worker) == ["w1", "w2"])
        #expect(tally["a"].map(\.alone) == [false, true], "alone: the only job its worker executed")
        #expect(tally["b"].map(\.worker) == ["w1"])
        #expect(tally["c"].isEmpty)
    }

    @Test func aReportWithoutAJournalIsIgnored() {
        var tally = CrashTally()
        var report = ControlMessage.crashed(jobIDs: ["a"], worker: "w1", journal: "j1")
        report.token = nil
        tally.record(report)
        #expect(tally["a"].isEmpty)
    }

    @Test func theOldestJobsAreForgottenPastTheCapacity() {
        var tally = CrashTally(capacity: 2)
        for (index, id) in ["a", "b", "c"].enumerated() {
            tally.record(ControlMessage.crashed(jobIDs: [id], worker: "w", journal: "j\(index)"))
        }
        #expect(tally["a"].isEmpty)
        #expect(tally["b"].count == 1 && tally["c"].count == 1)
    }

    @Test func theReportTravelsAsAControlMessage() throws {
        let report = ControlMessage.crashed(jobIDs: ["a"], worker: "w1", journal: "j1")
        let decoded = try ControlMessage.decode(try report.encoded())
        #expect(decoded.kind == "crashed")
        #expect(decoded.jobIDs == ["a"] && decoded.worker == "w1" && decoded.token == "j1")
    }
}
