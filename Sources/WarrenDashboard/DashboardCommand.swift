import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import Warren
import WarrenCLI

/// `warren dashboard`: serves the web dashboard until SIGINT or SIGTERM.
public struct DashboardCommand: ParsableCommand {
    /// Its name, help and discussion.
    public static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve a web dashboard of the fleet: queues, workers, jobs, results, dead letters, schedules.",
        discussion: """
            Listens on 127.0.0.1:8080 by default and prints its URL. On any other address it needs a credential, \
            from $WARREN_DASHBOARD_TOKEN or --credential-file: browsers give it as the password of HTTP basic auth \
            (any user name), scripts as a bearer token. Runs until SIGINT or SIGTERM.
            """)

    @OptionGroup var broker: BrokerOptions

    @Option(help: "The port to listen on (0: any free port).")
    var port = 8080

    @Option(help: "The address to listen on; beyond loopback, a credential is required.")
    var host = "127.0.0.1"

    @Option(
        name: .customLong("credential-file"),
        help: ArgumentHelp(
            "A file whose first line is the credential (default: $WARREN_DASHBOARD_TOKEN).", valueName: "file"))
    var credentialFile: String?

    @Option(help: ArgumentHelp("The schedule file the schedulers use, for the Schedules page.", valueName: "file"))
    var schedule: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Also show this job queue when no live worker consumes it (repeatable).", valueName: "name"))
    var queue: [String] = []

    @Option(
        name: .customLong("results-since"),
        help: ArgumentHelp("How far back to read results: 90, 30s, 10m, 2h, 1d.", valueName: "time"))
    var resultsSince = "1h"

    /// The command with its defaults; ArgumentParser fills it from the arguments.
    public init() {}

    /// Refuses a port outside 0...65535, a `--results-since` that is no time up to 7 days, and bad queue names.
    public func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port \(port): expected 0 to 65535") }
        guard let seconds = DurationText.seconds(resultsSince), seconds <= 7 * 86_400, seconds > 0 else {
            throw ValidationError("--results-since \(resultsSince): expected a time such as 90, 30s, 10m, 2h, up to 7d")
        }
        for name in queue {
            if let problem = Topology.problem(withJobQueue: name) { throw ValidationError("--queue: \(problem)") }
        }
    }

    /// Serves the dashboard until SIGINT or SIGTERM; exits 1 when it cannot listen.
    public func run() throws {
        var configuration = Dashboard.Configuration(url: broker.brokerURL)
        configuration.host = host
        configuration.port = port
        configuration.credential = try credential()
        configuration.queues = queue
        configuration.resultsSince = .milliseconds(Int((DurationText.seconds(resultsSince) ?? 3600) * 1000))
        if let schedule {
            do {
                configuration.schedules = try ScheduleFile.load(schedule)
            } catch let error as WarrenError {
                throw ValidationError(error.message)
            }
            configuration.scheduleFile = schedule
        }
        let dashboard: Dashboard
        do {
            dashboard = try Dashboard(configuration: configuration)
        } catch let error as WarrenError where error.code == .invalidConfiguration {
            throw ValidationError(error.message)
        }
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let outcome = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                try await dashboard.run { port in
                    // The URL names no credential: it is the browser's to ask for.
                    print("warren dashboard: http://\(shownHost):\(port)/")
                    fflush(nil)
                }
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) {
            FileHandle.standardError.write(Data("warren dashboard: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    /// The credential from `--credential-file`, else `$WARREN_DASHBOARD_TOKEN`, else none.
    private func credential() throws -> String? {
        if let credentialFile {
            guard let text = try? String(contentsOfFile: credentialFile, encoding: .utf8) else {
                throw ValidationError("--credential-file \(credentialFile): cannot read it")
            }
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else {
                throw ValidationError("--credential-file \(credentialFile): its first line is empty")
            }
            return trimmed
        }
        return ProcessInfo.processInfo.environment["WARREN_DASHBOARD_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
