import ArgumentParser
import Foundation
import Warren

/// `warren status`: every live worker, what it holds and what it has done.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show every live worker: id, host, local queues with width, executing and waiting, totals, uptime.")

    @OptionGroup var broker: BrokerOptions

    @Option(name: .long, help: "Seconds to wait for workers to answer.")
    var timeout: Double = 2

    @Flag(name: .long, help: "Print one JSON object per worker and line.")
    var json = false

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        let statuses = try producer.workerStatuses(timeout: .milliseconds(Int(timeout * 1000)))
        if json {
            for status in statuses { print(try ResultPrinter.json(status)) }
            return
        }
        guard !statuses.isEmpty else {
            print("no live workers answered within \(timeout) s")
            return
        }
        for status in statuses {
            let paused = status.pausedQueues.isEmpty ? "" : " paused=\(status.pausedQueues.joined(separator: ","))"
            print(
                "\(status.workerID) host=\(status.host) pid=\(status.pid) up=\(Self.duration(status.uptimeSeconds)) "
                    + "queues=\(status.queues.joined(separator: ","))\(paused) prefetch=\(status.prefetch)")
            for local in status.localQueues {
                print("  local \(local.name) width=\(local.width) executing=\(local.executing) waiting=\(local.waiting)")
            }
            let totals = JobStatus.allCases.map { "\($0.rawValue)=\(status.totals[$0.rawValue] ?? 0)" }
            print("  totals \(totals.joined(separator: " "))")
        }
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m\(total % 60)s" }
        return "\(total / 3600)h\(total % 3600 / 60)m"
    }
}
