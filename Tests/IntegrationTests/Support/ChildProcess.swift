import Foundation
import Synchronization
import Testing

/// A process the tests start: the `warren` CLI, a worker, a foreign AMQP client.
///
/// Thread safety: locked; the output files are written by the child and read here.
final class ChildProcess: Sendable {
    let process: Process
    let stdoutURL: URL
    let stderrURL: URL
    let name: String

    /// Starts `executable` with `arguments`; output goes to files in a temporary directory.
    init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], name: String? = nil) throws {
        let directory = try TestEnvironment.temporaryDirectory()
        stdoutURL = directory.appendingPathComponent("stdout")
        stderrURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        self.name = name ?? executable.lastPathComponent
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Waits until the process exits and returns its status; kills it after `timeout`.
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(60)) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            Issue.record("\(name) did not exit within \(timeout); killing it. stderr:\n\(stderr)")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    /// Sends a signal (SIGTERM for a graceful stop, SIGKILL for a crash).
    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits until standard error contains `text`.
    func waitForStderr(containing text: String, timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        while !stderr.contains(text) {
            guard process.isRunning else {
                Issue.record(
                    "\(name) exited (\(process.terminationStatus)) before printing '\(text)'. stderr:\n\(stderr)")
                throw ChildProcessError.exited
            }
            guard ContinuousClock.now < deadline else {
                Issue.record("\(name) did not print '\(text)' within \(timeout). stderr:\n\(stderr)")
                throw ChildProcessError.timeout
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Stops a still-running process (tests' cleanup).
    func terminate() {
        if process.isRunning {
            signal(SIGKILL)
            process.waitUntilExit()
        }
    }
}

enum ChildProcessError: Error {
    case exited, timeout
}

/// The `warren` CLI, run as a user runs it.
enum CLI {
    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `warren ARGUMENTS` to completion.
    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(60)) throws
        -> Output
    {
        let child = try ChildProcess(
            TestEnvironment.warrenBinary, arguments, environment: environment, name: "warren \(arguments.first ?? "")")
        let status = child.waitForExit(timeout: timeout)
        return Output(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    /// Starts `warren worker` on `queue` with debug logs, and waits until it consumes.
    static func startWorker(
        queue: String, id: String = TestEnvironment.uniqueName("worker"), arguments: [String] = [],
        environment: [String: String] = [:]
    ) throws -> ChildProcess {
        let worker = try ChildProcess(
            TestEnvironment.warrenBinary,
            [
                "worker", "--url", try TestEnvironment.brokerURL, "--queue", queue, "--worker-id", id, "--log-level",
                "debug",
            ]
                + arguments,
            environment: environment, name: "worker \(id)")
        try worker.waitForStderr(containing: "worker started")
        return worker
    }
}

extension ChildProcess {
    /// Whether this worker's debug log shows that job `id` started.
    func logsStart(of id: String) -> Bool {
        stderr.split(separator: "\n").contains { $0.contains("job=\(id)") && $0.hasSuffix("job started") }
    }

    /// Waits until this worker's debug log shows that job `id` started.
    func waitForStart(of id: String, timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        while !logsStart(of: id) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                Issue.record("\(name) did not start job \(id). stderr:\n\(stderr)")
                throw ChildProcessError.timeout
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
