import Foundation
import Testing

@testable import Warren

@Suite("SequenceStore")
struct SequenceStoreTests {
    @Test func numbersStrictlyIncrease() throws {
        let directory = try TemporaryDirectory()
        let store = SequenceStore(path: directory.path + "/sequence")
        var previous: UInt64 = 0
        for _ in 0..<1_000 {
            let next = try store.next()
            #expect(next > previous)
            previous = next
        }
    }

    @Test func numbersFollowTheClockInMicroseconds() throws {
        let directory = try TemporaryDirectory()
        let before = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let number = try SequenceStore(path: directory.path + "/sequence").next()
        #expect(number >= before)
    }

    @Test func createsMissingDirectories() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state/warren/sequence"
        _ = try SequenceStore(path: path).next()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func theLastNumberPersistsAcrossInstances() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let first = try SequenceStore(path: path).next()
        let stored = try String(contentsOfFile: path, encoding: .utf8)
        #expect(stored == String(repeating: " ", count: 20 - "\(first)".count) + "\(first)\n")
        let second = try SequenceStore(path: path).next()
        #expect(second > first)
    }

    @Test func continuesAfterANumberAheadOfTheClock() throws {
        // Another host's clock, or this one's before it was set back: the file wins over the clock.
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let ahead = UInt64(Date().timeIntervalSince1970 * 1_000_000) + 3_600_000_000
        try "\(ahead)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let store = SequenceStore(path: path)
        #expect(try store.next() == ahead + 1)
        #expect(try store.next() == ahead + 2)
    }

    @Test func anUnreadableFileFallsBackToTheClock() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        try "garbage".write(toFile: path, atomically: true, encoding: .utf8)
        let before = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        #expect(try SequenceStore(path: path).next() >= before)
    }

    @Test func concurrentStoresOnOneFileNeverRepeatANumber() async throws {
        // Each thread opens the file through its own store, so the flock on separate open file descriptions is what
        // keeps them apart: the same as separate producer processes on one host.
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let threads = 4
        let perThread = 250
        let numbers = Locked<[[UInt64]]>(Array(repeating: [], count: threads))
        let failures = Locked<[String]>([])
        let done = Locked(0)
        for index in 0..<threads {
            let thread = Thread {
                let store = SequenceStore(path: path)
                var mine: [UInt64] = []
                for _ in 0..<perThread {
                    do {
                        mine.append(try store.next())
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                numbers.withLock { $0[index] = mine }
                done.withLock { $0 += 1 }
            }
            thread.start()
        }
        try await waitUntil("\(threads) threads", timeout: .seconds(60)) { done.value == threads }

        #expect(failures.value.isEmpty)
        let all = numbers.value
        for mine in all {
            #expect(mine.count == perThread)
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0 < $1 }, "each thread's numbers increase")
        }
        let flat = all.flatMap { $0 }
        #expect(Set(flat).count == threads * perThread, "no number handed out twice")
        let last = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(UInt64(last) == flat.max(), "the file holds the largest number handed out")
    }

    @Test func aRangeIsConsecutiveAndFollowsTheClock() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let store = SequenceStore(path: path)
        let before = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let range = try store.reserve(5)
        #expect(range.count == 5)
        #expect(range.lowerBound >= before)
        #expect(try Self.stored(path) == range.upperBound, "the file holds the last number of the range")
        #expect(try store.next() > range.upperBound)
    }

    @Test func aRangeContinuesAfterANumberAheadOfTheClock() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let ahead = UInt64(Date().timeIntervalSince1970 * 1_000_000) + 3_600_000_000
        try "\(ahead)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let store = SequenceStore(path: path)
        #expect(try store.reserve(3) == ahead + 1...ahead + 3)
        #expect(try store.reserve(1) == ahead + 4...ahead + 4)
        #expect(try store.next() == ahead + 5)
    }

    @Test func concurrentRangesOnOneFileNeverOverlap() async throws {
        // As in concurrentStoresOnOneFileNeverRepeatANumber: each thread has its own open file description, so
        // its flock keeps it apart from the others as it would a separate process.
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let threads = 4
        let perThread = 200
        let ranges = Locked<[[ClosedRange<UInt64>]]>(Array(repeating: [], count: threads))
        let failures = Locked<[String]>([])
        let done = Locked(0)
        for index in 0..<threads {
            let thread = Thread {
                let store = SequenceStore(path: path)
                var mine: [ClosedRange<UInt64>] = []
                for round in 0..<perThread {
                    do {
                        mine.append(try store.reserve((round * 7 + index) % 20 + 1))
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                ranges.withLock { $0[index] = mine }
                done.withLock { $0 += 1 }
            }
            thread.start()
        }
        try await waitUntil("\(threads) threads", timeout: .seconds(60)) { done.value == threads }

        #expect(failures.value.isEmpty)
        for (index, mine) in ranges.value.enumerated() {
            #expect(mine.count == perThread)
            #expect(mine.indices.allSatisfy { mine[$0].count == ($0 * 7 + index) % 20 + 1 }, "sizes as asked")
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "each thread goes up")
        }
        let all = ranges.value.flatMap { $0 }.sorted { $0.lowerBound < $1.lowerBound }
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "no two ranges overlap")
        #expect(try Self.stored(path) == all.last?.upperBound, "the file holds the largest number handed out")
    }

    @Test func readsTheUnpaddedFormatOfOlderVersionsAndRewritesItAsARecord() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let ahead = UInt64(Date().timeIntervalSince1970 * 1_000_000) + 3_600_000_000
        try "\(ahead)\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try SequenceStore(path: path).reserve(2) == ahead + 1...ahead + 2)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes == SequenceStore.record(ahead + 2))
        #expect(bytes.count == SequenceStore.recordWidth)
    }

    @Test func olderVersionsReadTheRecord() throws {
        // What versions before fixed-width records did: read at most 32 bytes, trim whitespace, parse.
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let range = try SequenceStore(path: path).reserve(10)
        let handle = try #require(FileHandle(forReadingAtPath: path))
        let text = String(decoding: try handle.read(upToCount: 32) ?? Data(), as: UTF8.self)
        #expect(UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) == range.upperBound)
        for number: UInt64 in [0, 7, 1_795_313_882_672_853, .max] {
            let record = SequenceStore.record(number)
            #expect(record.count == SequenceStore.recordWidth)
            let old = String(decoding: record, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(UInt64(old) == number)
            #expect(SequenceStore.number(in: record[...]) == number)
        }
    }

    @Test func theRecordIsOverwrittenInPlace() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let store = SequenceStore(path: path)
        _ = try store.next()
        let inode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int)
        for count in [1, 100, 3] {
            let range = try store.reserve(count)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect(attributes[.size] as? Int == SequenceStore.recordWidth)
            #expect(attributes[.systemFileNumber] as? Int == inode)
            #expect(try Self.stored(path) == range.upperBound)
        }
    }

    @Test func aLongerFileReadsAsAbsentAndIsCutToOneRecord() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        try String(repeating: "9", count: 60).write(toFile: path, atomically: true, encoding: .utf8)
        let before = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let number = try SequenceStore(path: path).next()
        #expect(number >= before && number < before + 3_600_000_000)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == SequenceStore.record(number))
    }

    @Test func theRecordReaderAcceptsOnlyADecimalNumberBetweenWhitespace() {
        let cases: [(String, UInt64?)] = [
            ("1795313882672853\n", 1_795_313_882_672_853), ("   42\n", 42), ("\t42 \r\n", 42), ("007", 7),
            ("", nil), (" \n", nil), ("4 2", nil), ("-1", nil), ("+1", nil), ("0x10", nil), ("garbage", nil),
            ("18446744073709551615", .max), ("18446744073709551616", nil), ("99999999999999999999", nil),
        ]
        for (text, expected) in cases {
            #expect(SequenceStore.number(in: Array(text.utf8)[...]) == expected, "\(text.debugDescription)")
        }
    }

    @Test func numbersThatWouldNotFitIn64BitsAreAConfigurationError() throws {
        #expect(SequenceStore.numbers(after: 10, now: 5, count: 3) == 11...13)
        #expect(SequenceStore.numbers(after: 10, now: 50, count: 1) == 50...50)
        #expect(SequenceStore.numbers(after: .max - 2, now: 0, count: 2) == UInt64.max - 1...UInt64.max)
        #expect(SequenceStore.numbers(after: .max - 2, now: 0, count: 3) == nil)
        #expect(SequenceStore.numbers(after: .max, now: 0, count: 1) == nil)

        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        try "\(UInt64.max - 1)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let store = SequenceStore(path: path)
        let error = try #require(throws: WarrenError.self) { try store.reserve(2) }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains(path))
        #expect(try store.next() == .max, "a refused reservation changes nothing")
        #expect(throws: WarrenError.self) { try store.next() }
    }

    @Test func aDirectoryThatCannotBeCreatedIsASystemError() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/not-a-directory"
        try "x".write(toFile: file, atomically: true, encoding: .utf8)
        let path = file + "/warren/sequence"
        let error = #expect(throws: (any Error).self) { try SequenceStore(path: path).next() }
        let warrenError = try #require(error as? WarrenError)
        #expect(warrenError.code == .system)
        #expect(warrenError.message == "cannot create the directory of the sequence file '\(path)': Not a directory")
    }

    @Test func errorsInTheStateDirectorySayHowItWasChosen() {
        let state = StateDirectory.path
        let chosen = (ProcessInfo.processInfo.environment["WARREN_STATE_DIR"] ?? "").isEmpty == false
        #expect(
            StateDirectory.hint(for: state + "/sequence")
                == (chosen
                    ? " (the state directory, from WARREN_STATE_DIR)"
                    : " (set WARREN_STATE_DIR for another state directory)"))
        #expect(StateDirectory.hint(for: state + "-other/sequence") == "", "a path beside it, not in it")
        #expect(StateDirectory.hint(for: "/elsewhere/sequence") == "")
    }

    @Test func aFileThatCannotBeOpenedIsASystemErrorNamingThePath() throws {
        let directory = try TemporaryDirectory()
        // The path names an existing directory: open(O_RDWR) fails with EISDIR.
        let path = directory.path + "/sequence"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let error = try #require(throws: WarrenError.self) { try SequenceStore(path: path).next() }
        #expect(error.code == .system)
        #expect(error.message == "cannot open the sequence file '\(path)': Is a directory")
    }

    /// The number the sequence file at `path` holds.
    static func stored(_ path: String) throws -> UInt64? {
        UInt64(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func theDefaultPathHonoursWarrenStateDir() {
        // Read-only check of the environment the tests run in: the rule is WARREN_STATE_DIR, then XDG, then home.
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment["WARREN_STATE_DIR"] {
            #expect(SequenceStore.defaultPath == directory + "/sequence")
        } else if let state = environment["XDG_STATE_HOME"] {
            #expect(SequenceStore.defaultPath == state + "/warren/sequence")
        } else {
            #expect(SequenceStore.defaultPath == NSHomeDirectory() + "/.local/state/warren/sequence")
        }
    }
}

@Suite("SequenceFile")
struct SequenceFileTests {
    @Test func numbersIncreaseAndInterleaveWithOtherStoresOnThePath() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let held = SequenceFile(SequenceStore(path: path))
        let other = SequenceStore(path: path)
        var numbers: [UInt64] = []
        for index in 0..<200 {
            numbers.append(index.isMultiple(of: 3) ? try other.next() : try held.next())
        }
        let range = try held.reserve(50)
        #expect(range.count == 50)
        #expect(range.lowerBound > numbers.last!)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "held and opened reservations interleave")
        #expect(try SequenceStoreTests.stored(path) == range.upperBound)
    }

    @Test func aDeletedFileIsCreatedAgainAtThePath() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let held = SequenceFile(SequenceStore(path: path))
        let first = try held.next()
        try FileManager.default.removeItem(atPath: path)
        let second = try held.next()
        #expect(second > first)
        #expect(try SequenceStoreTests.stored(path) == second, "the number went to a new file, not the deleted one")
    }

    @Test func aReplacedFileIsReadAfterTheReplacement() throws {
        // An editor or a restore writes a new file and renames it over the old one: the held description still
        // refers to the old file, which has no name left.
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        let held = SequenceFile(SequenceStore(path: path))
        _ = try held.next()
        let ahead = UInt64(Date().timeIntervalSince1970 * 1_000_000) + 3_600_000_000
        try "\(ahead)\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try held.next() == ahead + 1)
        #expect(try SequenceStoreTests.stored(path) == ahead + 1)
    }

    @Test func anErrorIsASystemErrorAndTheNextReservationOpensThePathAgain() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/sequence"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let held = SequenceFile(SequenceStore(path: path))
        let error = try #require(throws: WarrenError.self) { try held.next() }
        #expect(error.code == .system)
        #expect(error.message.contains(path))
        try FileManager.default.removeItem(atPath: path)
        #expect(try held.next() > 0)
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
