import Foundation
import Testing

@testable import WarrenCLI

@Suite("GraphFile")
struct GraphFileTests {
    private func load(_ json: String) throws -> GraphFile {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try GraphFile.load(path)
    }

    @Test func timesAreNumbersOrStringsAsTheCommandLineTakesThem() throws {
        let graph = try load(
            #"{"jobs": [{"name": "a", "type": "t", "deadline": "10m", "delay": 5, "timeLimit": "250ms", "uniqueFor": "1h", "key": "k"}]}"#
        )
        let (requests, _) = graph.requests(defaultQueue: "q")
        let request = try #require(requests.first)
        let deadline = try #require(request.deadline).timeIntervalSinceNow
        #expect(deadline > 590 && deadline <= 600)
        #expect(request.timeLimit == .milliseconds(250))
        #expect(request.uniqueFor == .seconds(3600))
        #expect(try #require(request.notBefore).timeIntervalSinceNow > 4)
    }

    @Test func aTimeThatIsNoneIsRefused() {
        #expect(throws: (any Error).self) { try load(#"{"jobs": [{"name": "a", "type": "t", "deadline": "soon"}]}"#) }
    }
}
