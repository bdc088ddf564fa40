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
        #expect(stored == "\(first)\n")
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

    @Test func aDirectoryThatCannotBeCreatedIsAConfigurationError() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/not-a-directory"
        try "x".write(toFile: file, atomically: true, encoding: .utf8)
        let path = file + "/warren/sequence"
        let error = #expect(throws: (any Error).self) { try SequenceStore(path: path).next() }
        let warrenError = try #require(error as? WarrenError)
        #expect(warrenError.code == .invalidConfiguration)
        #expect(warrenError.message.contains(path))
        #expect(warrenError.message.contains("WARREN_STATE_DIR"))
    }

    @Test func aFileThatCannotBeOpenedIsAConfigurationErrorNamingThePath() throws {
        let directory = try TemporaryDirectory()
        // The path names an existing directory: open(O_RDWR) fails with EISDIR.
        let path = directory.path + "/sequence"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let error = try #require(throws: WarrenError.self) { try SequenceStore(path: path).next() }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message == "cannot open the sequence file '\(path)': Is a directory (set WARREN_STATE_DIR)")
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
