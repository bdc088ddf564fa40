import ArgumentParser
import Foundation
import NIOCore

/// `warren health`: asks the health endpoint of a worker or scheduler started with `--metrics-port`, for container
/// health checks and scripts that have no HTTP client.
struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask a worker's or scheduler's --metrics-port whether it is ready (or live); exit 0 if so, else 1.",
        discussion: """
            Ready (/readyz): connected to the broker, and not blocked by it (a memory or disk alarm). Live \
            (/livez): its broker thread turns; one that waits for its broker is live, one stuck for a minute is \
            not. Prints one line per part of the process (worker, scheduler).
            Example, a docker-compose health check of a worker started with --metrics-port 9464:
              warren health --port 9464
            """)

    @Option(help: "The port the worker or scheduler was given with --metrics-port.")
    var port: UInt16

    @Option(help: "The address it listens on (its --metrics-host; 0.0.0.0 is asked at 127.0.0.1).")
    var host = "127.0.0.1"

    @Flag(help: "Ask whether it is live (/livez) rather than ready (/readyz).")
    var live = false

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Double = 5

    @Flag(help: "Print the endpoint's JSON report, on one line.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be above 0 and at most 3600") }
        if port == 0 { throw ValidationError("--port 0 names no endpoint: give the port the worker logged") }
    }

    func run() throws {
        let path = live ? "/livez" : "/readyz"
        let address = host == "0.0.0.0" ? "127.0.0.1" : host
        let answer = try HealthProbe.get(
            host: address, port: Int(port), path: path, timeout: .nanoseconds(Int64(timeout * 1e9)))
        let body = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        let verdict = body?[live ? "live" : "ready"] as? Bool
        guard let components = body?["components"] as? [String: [String: Any]], let verdict else {
            throw HealthProbe.Failure(
                description: "\(HealthProbe.url(address, Int(port), path)) answered \(answer.status.code) "
                    + "\(ResultPrinter.printable(answer.status.reasonPhrase)), not a Warren health report (is that a "
                    + "worker's or scheduler's --metrics-port?)")
        }
        if json, let body {
            // Written anew: one line of valid JSON, whatever line breaks the endpoint's text held.
            let line = try JSONSerialization.data(
                withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: line, as: UTF8.self))
        } else {
            for (name, component) in components.sorted(by: { $0.key < $1.key }) {
                print("\(ResultPrinter.printable(name)): \(Self.describe(component, live: live))")
            }
        }
        // The report and the status code agree, from a Warren endpoint; anything else is no pass.
        guard answer.status == .ok, verdict else { throw ExitCode.failure }
    }

    /// One component's line: the verdict asked for, the connection and since when, and what is wrong.
    static func describe(_ component: [String: Any], live: Bool) -> String {
        let passes = component[live ? "live" : "ready"] as? Bool == true
        var line = live ? (passes ? "live" : "not live") : (passes ? "ready" : "not ready")
        let connection = component["connection"] as? String ?? "?"
        line += ", \(ResultPrinter.printable(connection))"
        if connection == "connected", let broker = component["broker"] as? String {
            line += " to \(ResultPrinter.printable(broker))"
        }
        if let since = component["since"] as? String { line += " since \(ResultPrinter.printable(since))" }
        if let reason = component["blockedReason"] as? String {
            line += "; the broker blocks it (\(ResultPrinter.printable(reason)))"
        }
        if let error = component["lastError"] as? String { line += "; \(ResultPrinter.printable(error))" }
        if let overdue = component["overdueSeconds"] as? Double, overdue >= 1 {
            line += "; its broker thread is \(overdue.formatted(.number.precision(.fractionLength(1)))) s late"
        }
        return line
    }
}
