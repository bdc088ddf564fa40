import ArgumentParser
import Dispatch
import Foundation
import Logging
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `warren schedule FILE`: enqueues recurring jobs until SIGTERM, SIGINT or SIGHUP; `--check` prints their next ticks.
struct ScheduleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Enqueue the jobs of a schedule file at their ticks, until SIGTERM, SIGINT or SIGHUP.",
        discussion: """
            Run it on as many hosts as you like, with the same file: one scheduler leads and enqueues, the others \
            take over when it stops. With --check, prints each schedule's next ticks and exits, without a broker.
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(
        help: ArgumentHelp(
            "The schedules, as JSON: {\"schedules\": [{\"name\", \"type\", \"cron\" or \"every\", …}]}.",
            valueName: "file"))
    var file: String

    @Flag(help: "Check the file and print each schedule's next ticks, in UTC and in its time zone; connect to nothing.")
    var check = false

    @Option(help: "With --check: how many ticks to print per schedule (default 3).")
    var count: Int?

    @Flag(name: .customLong("priority-queues"), help: "Create missing job queues as priority queues.")
    var priorityQueues = false

    @Flag(
        name: .customLong("quorum-queues"),
        help: "Create missing job queues, and warren.schedules, as quorum queues, replicated on the nodes of a cluster."
    )
    var quorumQueues = false

    @OptionGroup var brokerWait: BrokerWaitOptions

    @OptionGroup var metrics: MetricsOptions

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    @Option(name: .customLong("log-format"), help: "text, or json: one object per line.")
    var logFormat: LogFormat = .text

    func validate() throws {
        try metrics.checkHost()
        if let count {
            guard check else { throw ValidationError("--count goes with --check") }
            guard (1...1000).contains(count) else { throw ValidationError("--count \(count): expected 1 to 1000") }
        }
        if let problem = Topology.problem(creatingPriorityQueues: priorityQueues, quorumQueues: quorumQueues) {
            throw ValidationError("--priority-queues and --quorum-queues: \(problem)")
        }
    }

    func run() throws {
        let schedules: [Schedule]
        do {
            schedules = try ScheduleFile.load(file)
        } catch let error as WarrenError {
            throw ValidationError(error.message)
        }
        if check {
            print(ScheduleCommand.preview(of: schedules, from: Date(), count: count ?? 3), terminator: "")
            return
        }
        StandardStreams.ignoreBrokenPipes()
        LogSetup.bootstrap(level: logLevel, format: logFormat)
        var configuration = Scheduler.Configuration(url: broker.brokerURL, schedules: schedules)
        configuration.priorityQueues = priorityQueues
        configuration.quorumQueues = quorumQueues
        configuration.brokerWaitAtStart = brokerWait.duration
        configuration.logger.logLevel = logLevel
        let logger = configuration.logger
        // A bad broker URL is an error (exit 1), as for every command, not a usage error.
        try logFormat.reportingFailures(to: logger) {
            _ = try BrokerAddresses(configuration.url, connectionName: "warren scheduler")
        }
        let scheduler = try logFormat.reportingFailures(to: logger) {
            do {
                return try Scheduler(configuration: configuration)
            } catch let error as WarrenError where error.code != .broker {
                throw ValidationError(error.message)
            }
        }
        let signals = ProcessRecycling.stopSignals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { scheduler.stop() }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        let metricsServer = try logFormat.reportingFailures(to: logger) {
            try metrics.startServer(logger: logger, health: ["scheduler": scheduler.health])
        }
        defer { metricsServer?.stop() }
        try logFormat.reportingFailures(to: logger) { try scheduler.runOnCurrentThread() }
    }

    /// Each schedule's next `count` ticks after `now`: a line naming it, then one per tick.
    static func preview(of schedules: [Schedule], from now: Date, count: Int) -> String {
        var text = ""
        for schedule in schedules {
            text += "\(schedule.name): \(schedule.type) on \(schedule.queue), \(schedule.recurrence)\n"
            var tick = now
            for _ in 0..<count {
                guard let next = schedule.recurrence.tick(after: tick) else {
                    text += "  no further tick\n"
                    break
                }
                text += "  \(next.formatted(.iso8601))"
                if case .cron(_, let zone) = schedule.recurrence, !["UTC", "GMT"].contains(zone.identifier) {
                    var style = Date.ISO8601FormatStyle(timeZone: zone)
                    style = style.year().month().day().time(includingFractionalSeconds: false).timeZone(
                        separator: .colon)
                    text += "  (\(next.formatted(style)) \(zone.identifier))"
                }
                text += "\n"
                tick = next
            }
        }
        return text
    }
}
