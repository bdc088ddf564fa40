import Foundation
import Testing

/// `warren dashboard` run as a user runs it, on a free port, and an HTTP client for it: curl, a client that is not
/// ours.
///
/// Thread safety: immutable; the child process is locked.
final class DashboardProcess: Sendable {
    let child: ChildProcess
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    let base: String

    /// Starts the dashboard and waits until it prints its URL.
    init(arguments: [String] = [], environment: [String: String] = [:]) throws {
        child = try ChildProcess(
            TestEnvironment.warrenBinary,
            ["dashboard", "--url", try TestEnvironment.brokerURL, "--port", "0"] + arguments,
            environment: environment, name: "dashboard")
        let deadline = ContinuousClock.now + .seconds(30)
        while !child.stdout.contains("warren dashboard: http://") {
            guard child.process.isRunning, ContinuousClock.now < deadline else {
                Issue.record("the dashboard did not print its URL. stderr:\n\(child.stderr)")
                throw ChildProcessError.timeout
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let line = child.stdout.split(separator: "\n").first { $0.hasPrefix("warren dashboard: ") }!
        let url = line.dropFirst("warren dashboard: ".count).trimmingCharacters(in: .whitespaces)
        // A dashboard listening on every address is asked on loopback.
        base = String(url.dropLast()).replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
    }

    func stop() {
        child.terminate()
    }

    /// What one request got.
    struct Reply {
        let status: Int
        let headers: String
        let body: String
        /// Seconds from the request to the last byte of the answer, as curl measured them.
        let seconds: Double
    }

    /// Requests `path` with curl: a GET, or a POST of `form` (URL-encoded fields, in order).
    func request(
        _ path: String, form: [(String, String)]? = nil, headers: [String] = [], user: String? = nil
    ) throws -> Reply {
        let directory = try TestEnvironment.temporaryDirectory()
        let bodyFile = directory.appendingPathComponent("body").path
        let headerFile = directory.appendingPathComponent("headers").path
        var arguments = [
            "-s", "-o", bodyFile, "-D", headerFile, "-w", "%{http_code} %{time_total}", "--max-time", "30",
        ]
        for header in headers { arguments += ["-H", header] }
        if let user { arguments += ["-u", user] }
        for (name, value) in form ?? [] { arguments += ["--data-urlencode", "\(name)=\(value)"] }
        if form?.isEmpty == true { arguments += ["-X", "POST"] }
        arguments.append(base + path)
        let curl = try ChildProcess(URL(fileURLWithPath: "/usr/bin/curl"), arguments, name: "curl")
        guard curl.waitForExit(timeout: .seconds(40)) == 0 else {
            Issue.record("curl \(path) failed: \(curl.stderr)")
            throw ChildProcessError.exited
        }
        let written = curl.stdout.split(separator: " ")
        return Reply(
            status: written.first.flatMap { Int($0) } ?? 0,
            headers: (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "",
            body: (try? String(contentsOfFile: bodyFile, encoding: .utf8)) ?? "",
            seconds: written.last.flatMap { Double($0) } ?? .nan)
    }

    /// GETs `path` until its page satisfies `accepts`, or fails the test after `timeout`.
    @discardableResult
    func waitForPage(
        _ path: String, timeout: Duration = .seconds(60), user: String? = nil, _ accepts: (String) -> Bool
    ) throws -> String {
        let deadline = ContinuousClock.now + timeout
        var last = ""
        while ContinuousClock.now < deadline {
            last = try request(path, user: user).body
            if accepts(last) { return last }
            Thread.sleep(forTimeInterval: 0.3)
        }
        Issue.record("\(path) never showed what the test waits for; last page:\n\(last.suffix(4000))")
        throw ChildProcessError.timeout
    }

    /// The anti-forgery token of a page.
    static func token(in page: String) -> String? {
        guard let range = page.range(of: #"name="csrf" value="([0-9a-f]+)""#, options: .regularExpression) else {
            return nil
        }
        return page[range].split(separator: "\"").dropFirst(3).first.map(String.init)
    }
}
