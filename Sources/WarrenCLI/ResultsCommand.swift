import ArgumentParser
import Foundation
import Warren

/// `warren results`: prints stored results, newest per key, and marks stale ones.
struct ResultsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results",
        abstract:
            "Print stored results, or follow them as they arrive; for keyed jobs, report older arrivals as stale.",
        discussion: """
            Reads the warren.results stream, which keeps every result for 7 days; reading removes nothing. \
            Without --follow, prints the results stored when it starts (all of them, or those since --since) and \
            exits, or once --idle seconds pass without one; with --follow, starts now (or at --since) and keeps \
            printing until interrupted or --idle seconds pass without a result, reconnecting if it loses the broker \
            (exit 1 if the broker is still out of reach when --idle seconds have passed).
            Line format: STATUS JOB-ID type=T seq=N [key=K] worker=W attempt=A [output=JSON|error=CODE: MESSAGE]
            A stale result (an older sequence of a key whose newer result was seen) prints as `stale …`.
            With --follow, progress reports of running jobs print as: progress JOB-ID 42% worker=W MESSAGE
            With --json, each result is {"verdict": …, "offset": N, "result": …}; --offset N starts there again.
            """)

    @OptionGroup var broker: BrokerOptions

    @Flag(name: .shortAndLong, help: "Keep printing results as they arrive.")
    var follow = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Start with the results stored since then: 'all', 'now', a time ago such as 90, 30s, 10m, 2h, 1d, or an "
                + "ISO 8601 instant (2026-11-24T09:00:00Z).",
            valueName: "when"))
    var since: ResultsSince?

    @Option(name: .long, help: "Start at this stream offset (as --json prints it).")
    var offset: UInt64?

    @Option(name: .long, help: "Only results of this job (repeatable).")
    var job: [String] = []

    @Option(name: .long, help: "Only results of jobs with this key (repeatable).")
    var key: [String] = []

    @Option(
        name: .long,
        help: "Exit after this many seconds without a result (default: 1 without --follow, never with it).")
    var idle: Double?

    @Flag(name: .long, help: "Print one JSON object per line: {\"verdict\": …, \"offset\": N, \"result\": …}.")
    var json = false

    func validate() throws {
        if since != nil && offset != nil { throw ValidationError("give --since or --offset, not both") }
        if let idle, !(idle > 0 && idle <= Self.maxIdle) {
            throw ValidationError(
                "--idle must be seconds above 0 and at most \(Int(Self.maxIdle)) (a year); with --follow, leave it out "
                    + "to follow without end")
        }
        try JobIDArgument.validate(job)
    }

    func run() throws {
        let start: ResultReader.Start = offset.map { .offset($0) } ?? (since ?? (follow ? .now : .all)).start
        // A reconnection resumes after the last stream message read, or where this began: following from now, at
        // the second it began.
        let origin: ResultReader.Start = start == .next ? .since(Date()) : start
        // Without --follow, what was stored when it started: a fleet that stores results all the time would keep
        // the reader from ever being idle.
        var reader = try ResultReader(url: broker.brokerURL, from: start, progress: follow, endingNow: !follow)
        defer { reader.close() }
        let quiet = (idle ?? (follow ? nil : 1)).map { Duration.milliseconds(Int($0 * 1000)) }
        // When it exits if nothing comes: --idle after the last result or report, also while the broker is away.
        var quietUntil = quiet.map { ContinuousClock.now + $0 }
        var filter = StaleResultFilter()
        var lastOffset: UInt64?
        while true {
            let event: ResultReader.Event?
            do {
                event = try reader.next(waitingUpTo: quietUntil.map { max($0 - .now, .zero) } ?? .seconds(3600))
            } catch let error as WarrenError where follow && error.code == .broker {
                reader.close()
                reader = try reconnect(
                    after: error, from: lastOffset.map { .offset($0 + 1) } ?? origin, givingUpAt: quietUntil)
                continue
            }
            guard let event else {
                if let quietUntil, ContinuousClock.now >= quietUntil { return }
                continue
            }
            quietUntil = quiet.map { ContinuousClock.now + $0 }
            if case .result(_, let offset?) = event { lastOffset = offset }
            switch event {
            case .result(.success(let result), let offset):
                // Judged before --job picks: a job's result is stale because of another job of its key.
                let verdict = filter.judge(result)
                guard job.isEmpty || job.contains(result.jobID), key.isEmpty || result.key.map(key.contains) == true
                else { continue }
                print(
                    json
                        ? try ResultPrinter.json(result, verdict: verdict, offset: offset)
                        : ResultPrinter.line(result, verdict: verdict))
            case .result(.failure(let error), let offset):
                let at = offset.map(String.init) ?? "?"
                StandardErrorLines.write("warren: at offset \(at): \(ResultPrinter.printable(error.message))\n")
            case .progress(let report):
                // A report names no key: with --key, only those of the --job ids print.
                guard job.contains(report.jobID) || (job.isEmpty && key.isEmpty) else { continue }
                print(json ? try ResultPrinter.json(report) : ResultPrinter.line(report))
            }
            // Printed as they come, for a reader following them; one that cannot be written ends the command.
            try StandardStreams.checkOutput()
        }
    }

    /// The longest `--idle`: a year.
    static let maxIdle: Double = 31_536_000

    /// Connects again, waiting 100 ms doubling to 5 s between attempts, for as long as it takes (until
    /// interrupted, or until `deadline`, the end of `--idle`, when it exits 1), and reads on `from` there. Says why
    /// it cannot, each time the reason changes.
    private func reconnect(
        after error: WarrenError, from start: ResultReader.Start, givingUpAt deadline: ContinuousClock.Instant?
    ) throws -> ResultReader {
        StandardErrorLines.write("warren: lost the broker (\(error.message)); reconnecting\n")
        var delay = 0.1
        var said: String?
        while true {
            if let deadline {
                let left = deadline - .now
                guard left > .zero else {
                    StandardErrorLines.write(
                        "warren: no result for --idle \(idle.map { "\($0)" } ?? "") s, the broker out of reach "
                            + "(\(said ?? error.message)); giving up\n")
                    throw ExitCode.failure
                }
                Thread.sleep(forTimeInterval: min(delay, left / .seconds(1)))
            } else {
                Thread.sleep(forTimeInterval: delay)
            }
            do {
                let reader = try ResultReader(url: broker.brokerURL, from: start, progress: true)
                StandardErrorLines.write("warren: reconnected\n")
                return reader
            } catch {
                let reason = (error as? WarrenError)?.message ?? "\(error)"
                if reason != said {
                    StandardErrorLines.write("warren: cannot reconnect (\(reason)); trying again\n")
                    said = reason
                }
            }
            delay = min(delay * 2, 5)
        }
    }
}

/// Where `warren results --since` starts.
enum ResultsSince: ExpressibleByArgument, Equatable {
    case all
    case now
    case ago(TimeInterval)
    case at(Date)

    init?(argument: String) {
        switch argument.lowercased() {
        case "all": self = .all
        case "now": self = .now
        default:
            if let instant = Instant(argument: argument) {
                self = .at(instant.date)
            } else if let span = TimeSpan(argument: argument) {
                self = .ago(span.seconds)
            } else {
                return nil
            }
        }
    }

    var start: ResultReader.Start {
        switch self {
        case .all: .first
        case .now: .next
        case .ago(let seconds): .since(Date(timeIntervalSinceNow: -seconds))
        case .at(let date): .since(date)
        }
    }
}
