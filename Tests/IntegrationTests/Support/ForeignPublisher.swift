import Foundation
import Testing

/// `amqp-publish` from amqp-tools, a client that is not ours, publishing one message whose body it reads from
/// standard input: so bodies may exceed a command-line argument (128 KiB on Linux) and hold any bytes. It cannot
/// set `message_id`, `priority` or integer headers (docs/wire-format.md §8.1).
enum ForeignPublisher {
    static let tool = URL(fileURLWithPath: "/usr/bin/amqp-publish")

    /// Publishes `body` persistently; `contentType` `nil` leaves the property out.
    static func publish(
        _ body: [UInt8], url: String, exchange: String = "", routingKey: String,
        contentType: String? = "application/json"
    ) throws {
        let directory = try TestEnvironment.temporaryDirectory()
        let bodyFile = directory.appendingPathComponent("body")
        let stderrFile = directory.appendingPathComponent("stderr")
        try Data(body).write(to: bodyFile)
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        let process = Process()
        process.executableURL = tool
        process.arguments =
            ["--url", url, "-e", exchange, "-r", routingKey, "-p"] + (contentType.map { ["-C", $0] } ?? [])
        process.standardInput = try FileHandle(forReadingFrom: bodyFile)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let stderr = (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            Issue.record("amqp-publish exited \(process.terminationStatus): \(stderr)")
            throw ChildProcessError.exited
        }
    }
}
