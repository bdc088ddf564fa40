import AMQP
import Foundation
import Logging
import Synchronization
import Testing

@testable import WarrenCLI

/// Collects what a handler writes.
///
/// Thread safety: locked.
private final class Lines: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

@Suite("JSONLogHandler")
struct JSONLogHandlerTests {
    private func logger(_ lines: Lines, level: Logger.Level = .info) -> Logger {
        Logger(label: "warren.worker") { label in
            var handler = JSONLogHandler(label: label) { lines.append($0) }
            handler.logLevel = level
            return handler
        }
    }

    private func object(_ line: String) throws -> [String: Any] {
        #expect(line.hasSuffix("}\n"))
        #expect(line.dropLast().firstIndex(of: "\n") == nil, "one line per event")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func writesOneObjectPerLineWithTheFixedFieldsAndTheMetadata() throws {
        let lines = Lines()
        var logger = logger(lines)
        logger[metadataKey: "worker"] = "host-42"
        logger.info("job failed", metadata: ["job": "0c1e", "type": "sum", "attempt": "2"])
        logger.debug("below the level")
        let line = try #require(lines.all.first)
        #expect(lines.all.count == 1)
        let fields = try object(line)
        #expect(fields["level"] as? String == "info")
        #expect(fields["label"] as? String == "warren.worker")
        #expect(fields["message"] as? String == "job failed")
        #expect(fields["worker"] as? String == "host-42")
        #expect(fields["job"] as? String == "0c1e")
        #expect(fields["type"] as? String == "sum")
        #expect(fields["attempt"] as? String == "2")
        let timestamp = try #require(fields["timestamp"] as? String)
        #expect(
            try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(timestamp).timeIntervalSinceNow > -60)
        #expect(line.hasPrefix(#"{"timestamp":"#), "the fixed fields come first")
    }

    @Test func flattensNestedMetadataAndEscapesWhatJSONNeeds() throws {
        let lines = Lines()
        logger(lines).warning(
            "a \"quoted\"\nmulti-line\tmessage \u{01} ✓",
            metadata: [
                "error": ["code": "invalidInput", "detail": ["field": "numbers"]],
                "queues": ["warren.default", "io"],
                "message": "collides with a fixed field",
                "empty": [:],
            ])
        let fields = try object(try #require(lines.all.first))
        #expect(fields["message"] as? String == "a \"quoted\"\nmulti-line\tmessage \u{01} ✓")
        #expect(fields["error.code"] as? String == "invalidInput")
        #expect(fields["error.detail.field"] as? String == "numbers")
        #expect(fields["queues"] as? [String] == ["warren.default", "io"])
        #expect(fields["metadata.message"] as? String == "collides with a fixed field")
        #expect(fields["empty"] as? String == "[:]")
    }

    @Test func aWorkerStartLineShowsARedactedURLAndNoPassword() throws {
        let lines = Lines()
        let url = "amqp://warren:s3cr%40t/pw@broker.example:5672/%2F,amqp://warren:s3cr%40t/pw@backup.example/jobs"
        var logger = logger(lines)
        logger[metadataKey: "worker"] = "host-42"
        logger.info(
            "worker started",
            metadata: [
                "broker": "\(AMQPConfiguration.redact(url))",
                "queues": "[\"warren.default\"]", "prefetch": "4", "localQueues": "[\"default=4\"]",
            ])
        let configuration = try AMQPConfiguration(url: "amqp://warren:s3cr3t@broker.example:5672/%2F")
        logger.warning("lost the broker; reconnecting", metadata: ["broker": "\(configuration.redactedURL)"])
        #expect(lines.all.count == 2)
        for line in lines.all {
            #expect(!line.contains("s3cr"), "\(line)")
            #expect(line.contains("warren:***@broker.example"), "\(line)")
            _ = try object(line)
        }
    }

    @Test func metadataProvidersAndCallMetadataMergeInOrder() throws {
        let lines = Lines()
        let provider = Logger.MetadataProvider { ["trace": "t-1", "job": "from-provider"] }
        var logger = Logger(label: "warren.worker") { label in
            JSONLogHandler(label: label, metadataProvider: provider) { lines.append($0) }
        }
        logger[metadataKey: "job"] = "from-logger"
        logger.info("merged", metadata: ["attempt": "1"])
        let fields = try object(try #require(lines.all.first))
        #expect(fields["trace"] as? String == "t-1")
        #expect(fields["job"] as? String == "from-provider")
        #expect(fields["attempt"] as? String == "1")
    }
}
