import ArgumentParser
import Testing

@testable import WarrenCLI

@Suite("warren worker --max-jobs and --max-memory")
struct RecyclingOptionsTests {
    @Test(arguments: [
        ("512M", 512 << 20), ("512MB", 512 << 20), ("512mib", 512 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29),
        ("64k", 64 << 10), ("64KB", 64 << 10),
    ])
    func sizesTakeBinaryUnits(_ text: String, _ bytes: Int) {
        #expect(MemorySize(argument: text)?.bytes == bytes)
    }

    @Test(arguments: ["512", "M", "-1G", "1e3M", "0x10M", "12T", "1.5.2G", "5 G", "1e30G"])
    func sizesWithoutAUnitOrNumberAreRefused(_ text: String) {
        #expect(MemorySize(argument: text) == nil)
    }

    @Test func theOptionsReachTheConfiguration() throws {
        let configuration = try WorkerOptions.parse(["--max-jobs", "1000", "--max-memory", "768M"]).configuration()
        #expect(configuration.maxJobs == 1000)
        #expect(configuration.maxResidentMemory == 768 << 20)
        let defaults = try WorkerOptions.parse([]).configuration()
        #expect(defaults.maxJobs == nil && defaults.maxResidentMemory == nil)
    }

    @Test(arguments: [
        (["--max-jobs", "0"], "--max-jobs 0: expected at least 1"),
        (["--max-memory", "1023K"], "--max-memory: expected at least 1M"),
    ])
    func limitsThatCannotWorkAreRefused(_ arguments: [String], _ message: String) {
        let error = #expect(throws: (any Error).self) { try WorkerOptions.parse(arguments) }
        #expect(error.map(WorkerOptions.message(for:)) == message)
    }
}
