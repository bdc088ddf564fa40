import ArgumentParser
import Foundation
import Warren

/// `warren results`: prints stored results, newest per key, and marks stale ones.
struct ResultsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results",
        abstract: "Print results as they arrive; for keyed jobs, report older arrivals as stale.",
        discussion: """
            Reads (and removes) results from the warren.results queue. Without --follow, prints what is stored \
            and exits; with --follow, keeps printing until interrupted or --idle seconds pass without a result.
            Line format: STATUS JOB-ID type=T seq=N [key=K] worker=W attempt=A [output=JSON|error=CODE: MESSAGE]
            A stale result (an older sequence of a key whose newer result was seen) prints as `stale …`.
            With --follow, progress reports of running jobs print as: progress JOB-ID 42% worker=W MESSAGE
            """)

    @OptionGroup var broker: BrokerOptions

    @Flag(name: .shortAndLong, help: "Keep printing results as they arrive.")
    var follow = false

    @Option(name: .long, help: "With --follow: exit after this many seconds without a result.")
    var idle: Double?

    @Flag(name: .long, help: "Print one JSON object per line: {\"verdict\": …, \"result\": …}.")
    var json = false

    func run() throws {
        let reader = try ResultReader(url: broker.brokerURL)
        defer { reader.close() }
        var filter = StaleResultFilter()
        while true {
            let next: ResultReader.Event?
            if follow {
                next = try reader.next(waitingUpTo: idle.map { .milliseconds(Int($0 * 1000)) } ?? .seconds(3600))
                if next == nil && idle != nil { return }
            } else {
                next = try reader.next().map(ResultReader.Event.result)
                if next == nil { return }
            }
            switch next {
            case .result(.success(let result))?:
                let verdict = filter.judge(result)
                print(json ? try ResultPrinter.json(result, verdict: verdict) : ResultPrinter.line(result, verdict: verdict))
            case .result(.failure(let error))?:
                FileHandle.standardError.write(Data("warren: \(error.message)\n".utf8))
            case .progress(let report)?:
                print(json ? try ResultPrinter.json(report) : ResultPrinter.line(report))
            case nil:
                continue
            }
            fflush(nil)
        }
    }
}
