import ArgumentParser
import Foundation
import Testing
import Warren

@testable import WarrenCLI

@Suite("warren enqueue --unique-for, and a graph file's uniqueFor")
struct UniqueJobOptionsTests {
    @Test func enqueueTakesALockLifetimeWithAKey() throws {
        #expect(try EnqueueCommand.parse(["sum", "--key", "k", "--unique-for", "10m"]).uniqueFor?.seconds == 600)
        #expect(try EnqueueCommand.parse(["sum", "--key", "k", "--unique-for", "7d"]).uniqueFor?.seconds == 604_800)
    }

    @Test(arguments: [
        (["sum", "--unique-for", "1m"], "--unique-for needs --key: the lock is the key's"),
        (
            ["sum", "--key", "k", "--supersede", "--unique-for", "1m"],
            "--unique-for and --supersede: give one or the other"
        ),
        (
            ["sum", "--key", "k", "--unique-for", "500ms"],
            "--unique-for: a unique job's lock lasts from 1 second to 7 days (1 to 604800 seconds); got 0.5 seconds"
        ),
        (
            ["sum", "--key", "k", "--unique-for", "8d"],
            "--unique-for: a unique job's lock lasts from 1 second to 7 days (1 to 604800 seconds); got 691200.0 seconds"
        ),
        (
            ["sum", "--key", String(repeating: "k", count: 242), "--unique-for", "1m"],
            "--unique-for: a unique job's key must be 1 to 241 bytes long (its lock is a queue named "
                + "'warren.unique.KEY'); got 242 bytes"
        ),
        (["--graph", "g.json", "--unique-for", "1m"], "--graph takes each job's settings from the file"),
    ])
    func badUniqueOptionsAreRefused(arguments: [String], message: String) {
        let error = #expect(throws: (any Error).self) { try EnqueueCommand.parse(arguments) }
        #expect(error.map(EnqueueCommand.message(for:)) == message)
    }

    @Test func aGraphFileJobTakesALockLifetimeInSeconds() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = URL(fileURLWithPath: directory.appendingPathComponent("graph.json").path)
        try Data(
            #"{"jobs": [{"name": "a", "type": "sum", "key": "k", "uniqueFor": 90}, {"name": "b", "type": "echo"}]}"#
                .utf8
        )
        .write(to: file)
        let requests = try GraphFile.load(file.path).requests(defaultQueue: "q").requests
        #expect(requests.map(\.uniqueFor) == [.seconds(90), nil])
        for (job, message) in [
            (
                #"{"name": "a", "type": "sum", "uniqueFor": 90}"#,
                "job 'a': uniqueFor: a unique job needs a key: its lock is the key's"
            ),
            (
                #"{"name": "a", "type": "sum", "key": "k", "uniqueFor": 1e300}"#,
                "job 'a': uniqueFor: a unique job's lock lasts from 1 second to 7 days (1 to 604800 seconds); got 1e+300 seconds"
            ),
        ] {
            try Data(#"{"jobs": [\#(job)]}"#.utf8).write(to: file)
            let error = #expect(throws: GraphFileError.self) { try GraphFile.load(file.path) }
            #expect(error?.description == message)
        }
    }
}
