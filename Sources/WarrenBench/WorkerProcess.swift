import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A worker the benchmark runs as a process of its own, so that its CPU time and memory can be read from `/proc`.
///
/// Its standard output and error go to a log file, shown when it fails.
final class WorkerProcess {
    private let process = Process()
    private let logURL: URL
    /// What it is, for messages: `warren worker on QUEUE`.
    let name: String

    /// Starts `executable` with `arguments`.
    init(executable: String, arguments: [String], name: String, logDirectory: URL) throws {
        self.name = name
        logURL = logDirectory.appendingPathComponent("\(name.replacingOccurrences(of: " ", with: "-")).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw BenchError("cannot start \(name) from '\(executable)': \(error)")
        }
    }

    /// The process id.
    var pid: Int32 { process.processIdentifier }

    var isRunning: Bool { process.isRunning }

    /// The last lines the process wrote.
    var logTail: String {
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(10).joined(separator: "\n")
    }

    /// Its CPU time and memory now.
    func snapshot() throws -> ProcessSnapshot {
        do {
            return try ProcessSnapshot(pid: pid)
        } catch {
            throw BenchError(
                "\(name) exited (status \(process.isRunning ? 0 : process.terminationStatus)):\n\(logTail)")
        }
    }

    /// Waits until `isReady()` holds, checking every 20 ms (start-up only, not a measured path).
    /// - Throws: ``BenchError`` when the process exits first or `timeout` passes.
    func waitUntil(timeout: Duration = .seconds(60), _ isReady: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while try !isReady() {
            guard process.isRunning else {
                throw BenchError("\(name) exited with status \(process.terminationStatus):\n\(logTail)")
            }
            guard ContinuousClock.now < deadline else {
                throw BenchError("\(name) did not start consuming within \(timeout):\n\(logTail)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Stops it with SIGTERM (SIGKILL after 30 s) and waits until it exited.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit {
        stop()
    }
}
