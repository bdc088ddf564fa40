import ArgumentParser
import Foundation
import Warren

/// `warren cancel`: cancels jobs wherever they are.
struct CancelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel jobs by id, wherever they are: executing, waiting in a worker, or still in the broker.",
        discussion: """
            Each cancelled job ends with one `cancelled` result. Workers started later (within a day) honour the \
            cancellation too.
            Give ids, or --key with --before, or --all: one of the three.
            Examples:
              warren cancel 3f0c…  7a1e…
              warren cancel --ids-from stale-jobs.txt
              warren cancel --key totals --before 1763779200123456
              warren cancel --all --queue images
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: "Ids of the jobs to cancel.")
    var ids: [String] = []

    @Option(
        name: .customLong("ids-from"),
        help: ArgumentHelp(
            "Also cancel the ids in this file, one per line, # for comments ('-': standard input): for thousands.",
            valueName: "file"))
    var idsFrom: String?

    @Option(name: .long, help: "With --before: cancel every job of this key older than that sequence.")
    var key: String?

    // Unconditional: `--before -1` is a value to refuse with a reason, not a missing one.
    @Option(name: .long, parsing: .unconditional, help: "With --key: the sequence number older jobs are below.")
    var before: UInt64?

    @Flag(name: .long, help: "Cancel every job enqueued so far: in the broker, waiting in workers and executing.")
    var all = false

    @Option(name: .long, help: "With --all: only the jobs of this broker queue.")
    var queue: String?

    func validate() throws {
        let forms = [!ids.isEmpty || idsFrom != nil, key != nil || before != nil, all].filter { $0 }.count
        if forms == 0 { throw ValidationError("name job ids, or --key with --before, or --all") }
        if forms > 1 { throw ValidationError("give job ids, --key with --before, or --all: one of them") }
        if queue != nil && !all { throw ValidationError("--queue goes with --all") }
        try QueueArgument.validate(queue.map { [$0] } ?? [])
        if (key == nil) != (before == nil) { throw ValidationError("--key and --before go together") }
        if key?.isEmpty == true { throw ValidationError("--key is empty") }
        // Sequence numbers are microseconds since 1970 when issued: one far ahead (a nanosecond time, a typo) would
        // cancel every job of the key enqueued until then, for as long as the control stream keeps the message.
        if let before, before > Self.latestPlausibleSequence() {
            throw ValidationError(
                "--before \(before) is later than any sequence number issued within the next hour (they are "
                    + "microseconds since 1970: now about \(Self.latestPlausibleSequence() - 3_600_000_000)); it would "
                    + "cancel the key's jobs enqueued until then, for a day. Give the sequence number of a job")
        }
        try JobIDArgument.validate(ids)
    }

    /// The sequence number this host's clock gives now, plus an hour for clocks that run ahead of it.
    static func latestPlausibleSequence() -> UInt64 {
        UInt64((Date().timeIntervalSince1970 + 3600) * 1_000_000)
    }

    func run() throws {
        // Many ids are best read from a file: swift-argument-parser takes time that grows with the square of the
        // number of arguments (3 s for 4,000).
        let jobIDs = (ids + (try idsFrom.map(Self.readIDs) ?? [])).uniqued()
        try JobIDArgument.validate(jobIDs)
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        if !jobIDs.isEmpty {
            try producer.cancel(jobIDs: jobIDs)
            // A job that already ended, or never was, is not affected: only a result tells.
            let jobs = "\(jobIDs.count) job\(jobIDs.count == 1 ? "" : "s")"
            print("cancellation sent for \(jobs) (one that already ended keeps its result)")
            if jobIDs.count > ControlMessage.cancellationsRemembered {
                StandardErrorLines.write(
                    "warren: warning: workers remember the newest \(ControlMessage.cancellationsRemembered) cancelled "
                        + "ids: the jobs they hold are cancelled, but of those still in the broker only the last "
                        + "\(ControlMessage.cancellationsRemembered) listed are (docs/wire-format.md §4.2)\n")
            }
        }
        if all {
            try producer.cancelAll(queue: queue)
            print("cancellation sent for every job enqueued so far\(queue.map { " on queue \($0)" } ?? "")")
        }
        if let key, let before {
            try producer.supersede(key: key, before: before)
            print("cancellation sent for jobs of key '\(key)' below sequence \(before)")
        }
    }

    /// The ids in `path` (`-`: standard input), one per line; blank lines, what follows a `#` (no job id holds one)
    /// and surrounding spaces are ignored. A line that holds no job id is refused, naming the file and the line; so
    /// is a file with none, as `cancel` without ids is: the list that should have been there was not made (a `grep`
    /// that found nothing, say).
    static func readIDs(_ path: String) throws -> [String] {
        guard let data = InputFile.contents(of: path == "-" ? "/dev/stdin" : path) else {
            throw ValidationError("--ids-from \(path): cannot read it")
        }
        var ids: [String] = []
        let lines = String(decoding: data, as: UTF8.self).split(
            omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (number, line) in zip(1..., lines) {
            let id = line.prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
            guard !id.isEmpty else { continue }
            if id.contains(where: \.isWhitespace) {
                // Two ids on a line, or a graph's `NAME ID`: which to take is not for this command to guess.
                throw ValidationError(
                    "--ids-from \(path), line \(number): one job id per line (for the `NAME ID` lines of "
                        + "enqueue --graph, take the second column: awk '{print $2}')")
            }
            if let problem = OperationDescriptor.problem(withID: id) {
                throw ValidationError("--ids-from \(path), line \(number): \(ResultPrinter.printable(problem))")
            }
            ids.append(id)
        }
        guard !ids.isEmpty else {
            throw ValidationError("--ids-from \(path): no job ids in it (one per line; # starts a comment)")
        }
        return ids
    }
}
