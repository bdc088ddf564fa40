import ArgumentParser
import Foundation
import Testing
import Warren

@testable import WarrenCLI

@Suite("warren worker --time-limit and warren status --jobs")
struct TimeLimitAndJobListingTests {
    private func limits(_ arguments: [String]) throws -> [String: Duration] {
        try WorkerOptions.parse(arguments.flatMap { ["--time-limit", $0] }).configuration().timeLimits
    }

    @Test func timeLimitsTakeSecondsAndUnits() throws {
        let parsed = try limits(["sum=90", "sleep=250ms", "echo=1.5m", "fail=2h"])
        #expect(
            parsed == ["sum": .seconds(90), "sleep": .milliseconds(250), "echo": .seconds(90), "fail": .seconds(7200)])
    }

    @Test(arguments: [
        ("sum=soon", "--time-limit sum=soon: 'soon' is no duration (seconds, or 250ms, 30s, 10m, 2h, 1d)"),
        ("sum", "--time-limit sum: expected type=duration"),
        ("sum=0", "--time-limit sum=0: expected 1 ms to a year"),
        ("sum=0.1ms", "--time-limit sum=0.1ms: expected 1 ms to a year"),
        ("sum=366d", "--time-limit sum=366d: expected 1 ms to a year"),
        ("sum=-5s", "--time-limit sum=-5s: '-5s' is no duration (seconds, or 250ms, 30s, 10m, 2h, 1d)"),
        ("sum=0x10", "--time-limit sum=0x10: '0x10' is no duration (seconds, or 250ms, 30s, 10m, 2h, 1d)"),
        ("sum=1e3", "--time-limit sum=1e3: '1e3' is no duration (seconds, or 250ms, 30s, 10m, 2h, 1d)"),
    ])
    func badTimeLimitsAreRefused(entry: String, message: String) {
        let error = #expect(throws: ValidationError.self) { try limits([entry]) }
        #expect(error?.message == message)
    }

    @Test func aTypeGivenTwiceIsRefused() {
        let error = #expect(throws: ValidationError.self) { try limits(["sum=1s", "sum=2s"]) }
        #expect(error?.message == "--time-limit sum is given twice")
    }

    @Test func enqueueTakesAJobsOwnTimeLimit() throws {
        #expect(try EnqueueCommand.parse(["sum", "--time-limit", "250ms"]).timeLimit?.seconds == 0.25)
        #expect(try EnqueueCommand.parse(["sum", "--time-limit", "2h"]).timeLimit?.seconds == 7200)
        for (limit, message) in [
            (
                "0",
                "--time-limit: a time limit must be from 1 ms to a year (0.001 to 31536000 seconds); got 0.0 seconds"
            ),
            (
                "400d",
                "--time-limit: a time limit must be from 1 ms to a year (0.001 to 31536000 seconds); got 34560000.0 seconds"
            ),
        ] {
            let error = #expect(throws: (any Error).self) { try EnqueueCommand.parse(["sum", "--time-limit", limit]) }
            #expect(error.map(EnqueueCommand.message(for:)) == message)
        }
        #expect(throws: (any Error).self) { try EnqueueCommand.parse(["sum", "--time-limit", "soon"]) }
        let graph = #expect(throws: (any Error).self) {
            try EnqueueCommand.parse(["--graph", "g.json", "--time-limit", "1s"])
        }
        #expect(graph.map(EnqueueCommand.message(for:)) == "--graph takes each job's settings from the file")
    }

    @Test func aGraphFileJobTakesATimeLimitInSeconds() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("graph.json").path
        try Data(#"{"jobs": [{"name": "a", "type": "sum", "timeLimit": 1.5}, {"name": "b", "type": "echo"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let requests = try GraphFile.load(file).requests(defaultQueue: "q").requests
        #expect(requests.map(\.timeLimit) == [.milliseconds(1500), nil])
        try Data(#"{"jobs": [{"name": "a", "type": "sum", "timeLimit": 0}]}"#.utf8).write(
            to: URL(fileURLWithPath: file))
        let error = #expect(throws: GraphFileError.self) { try GraphFile.load(file) }
        #expect(error?.description.hasPrefix("job 'a': timeLimit: a time limit must be from 1 ms to a year") == true)
    }

    @Test func aJobLineSaysWhereTheJobIsAndForHowLong() {
        var job = WorkerStatus.Job(
            id: "j-1", type: "sum", state: .executing, queue: "warren.default", localQueue: "cpu", priority: .high,
            key: nil, sequence: 5, attempt: 2, heldSeconds: 400, executingSeconds: 75, progress: 0.424,
            progressMessage: "adding 7", timeLimitSeconds: 3600, cancelled: "timeLimit")
        #expect(
            [0.25, 0.001, 1.5, 30, 600, 5400, 86_400].map(StatusCommand.timeLimit) == [
                "250ms", "1ms", "1.5s", "30s", "10m", "90m", "1d",
            ])
        // A status reply is another process's word: values no Int holds print, rather than trap.
        #expect([1e300, .nan, -.infinity].map(StatusCommand.timeLimit) == [">1y", "?", "?"])
        #expect([1e300, .infinity, .nan].map(StatusCommand.duration) == [">100y", ">100y", "?"])
        #expect([1e300, -5, .nan, 0.425].map(ResultPrinter.percent) == ["100%", "0%", "?%", "43%"])
        #expect(
            StatusCommand.jobLine(job)
                == "job j-1 type=sum executing for 1m15s attempt=2 priority=high queue=warren.default local=cpu "
                + "time-limit=1h cancelled=timeLimit progress=42% adding 7")
        job = WorkerStatus.Job(
            id: "j-2", type: "echo", state: .waitingForDependencies, queue: "q", localQueue: "default",
            priority: .normal, key: "totals", sequence: 9, attempt: 1, heldSeconds: 2.54, executingSeconds: nil,
            progress: nil, progressMessage: nil, timeLimitSeconds: nil, cancelled: nil, unique: true,
            waitingOn: ["d-1", "d-2", "d-3", "d-4"])
        #expect(
            StatusCommand.jobLine(job)
                == "job j-2 type=echo waitingForDependencies for 2.5s attempt=1 priority=normal queue=q local=default "
                + "key=totals seq=9 unique waiting-on=d-1,d-2,d-3,…")
    }

    @Test func textAJobChoseCannotForgeALine() throws {
        let job = WorkerStatus.Job(
            id: "j-3\u{1B}", type: "echo\n", state: .executing, queue: "q\r", localQueue: "default", priority: .normal,
            key: "evil\n  job fake type=x executing for 99h", sequence: 1, attempt: 1, heldSeconds: 1,
            executingSeconds: 1, progress: 0.5, progressMessage: "half\r\u{1B}[2J", timeLimitSeconds: nil,
            cancelled: nil)
        let line = StatusCommand.jobLine(job)
        #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{1B}"))
        #expect(line.hasSuffix("key=evil\\n  job fake type=x executing for 99h seq=1 progress=50% half\\r\\u{1B}[2J"))
        #expect(line.hasPrefix("job j-3\\u{1B} type=echo\\n executing"))
        #expect(line.contains("queue=q\\r local=default"))
        #expect(ResultPrinter.printable("plain text, ünïcode") == "plain text, ünïcode")
        // Unicode's control characters, C0 and C1, and the backslash, found in the UTF-8 bytes; nothing else is.
        for control in ["\u{0}", "\u{1F}", "\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "a\nb", #"a\b"#] {
            #expect(ResultPrinter.needsEscaping(control), "\(control.unicodeScalars.map(\.value))")
        }
        for plain in ["\u{A0}", "Â", "é", "\u{2028}", "日本", "🙂", ""] {
            #expect(!ResultPrinter.needsEscaping(plain), "\(plain.unicodeScalars.map(\.value))")
        }
        #expect(ResultPrinter.printable("x\u{85}y") == "x\\u{85}y")
        #expect(ResultPrinter.printable(#"C:\temp\n"#) == #"C:\\temp\\n"#)
        // A result's output is JSON: DEL and C1, which JSONEncoder leaves raw, become JSON escapes of the same text.
        let output = "{\"text\":\"a\u{7F}b\u{9B}2J\\\"\u{85}é\"}"
        let escaped = ResultPrinter.jsonEscapingControls(output)
        #expect(escaped == #"{"text":"a\u007fb\u009b2J\"\u0085é"}"#)
        #expect(
            try JSONDecoder().decode([String: String].self, from: Data(escaped.utf8)) == [
                "text": "a\u{7F}b\u{9B}2J\"\u{85}é"
            ])
    }
}
