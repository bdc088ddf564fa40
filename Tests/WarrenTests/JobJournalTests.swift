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
}
