import Foundation
import Testing

@testable import Warren

/// The job journal: the ids a host's producers enqueued, so that a dependency on anything else is refused.
@Suite("JobJournal")
struct JobJournalTests {
    @Test func anIdsLastLineCounts() throws {
        let directory = try TemporaryDirectory()
        let journal = JobJournal(path: directory.path + "/journal")
        #expect(try journal.known(["a"]).isEmpty, "no journal yet: nothing known")
        try journal.append(["a", "b", "-c"])
        try journal.retract(["b", "-c"])
        #expect(try journal.known(["a", "b", "-c", "d"]) == ["a"])
        // An id enqueued again after it was taken back (a caller's own id, reused) is known again.
        try journal.append(["b"])
        #expect(try journal.known(["a", "b"]) == ["a", "b"])
    }

    @Test func aStateDirectoryThatIsAFileIsNoAnswer() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/file"
        try Data().write(to: URL(fileURLWithPath: file))
        let error = try #require(throws: WarrenError.self) { try JobJournal(path: file + "/journal").known(["a"]) }
        #expect(error.code == .system && error.message.contains("Not a directory"), "\(error.message)")
    }

    @Test func theNewestLimitIsKeptWhenTrimmed() throws {
        let directory = try TemporaryDirectory()
        let journal = JobJournal(path: directory.path + "/journal")
        // 37-byte lines (an id and its newline): 400,000 are over 12 MiB, trimmed at the next append.
        let ids = (0..<400_000).map { String(format: "%036d", $0) }
        try journal.append(ids)
        try journal.append(["last"])
        let size = try FileManager.default.attributesOfItem(atPath: directory.path + "/journal")[.size] as? Int ?? 0
        #expect(size <= JobJournal.limit + 5 && size > JobJournal.limit - 37)
        let kept = JobJournal.limit / 37
        #expect(try journal.known([ids[ids.count - kept + 1], ids.last!, "last"]).count == 3)
        #expect(try journal.known([ids[ids.count - kept - 1]]).isEmpty)
    }
}
