import Foundation
import Logging
import Synchronization
import Testing

@testable import WarrenCLI

@Suite("TextLogHandler")
struct TextLogHandlerTests {
    /// Logs one line through a text handler and returns it.
    private func line(_ message: Logger.Message, metadata: Logger.Metadata = [:]) -> String {
        let lines = Mutex<[String]>([])
        let logger = Logger(label: "warren.worker") { label in
            TextLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
        }
        logger.warning(message, metadata: metadata)
        return lines.withLock { $0.joined() }
    }

    @Test func linesReadTimestampLevelLabelFieldsSourceAndMessage() throws {
        let text = line("job failed", metadata: ["job": "0c1e", "attempt": "2"])
        let pattern =
            #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} warning warren.worker: attempt=2 job=0c1e \[WarrenCLITests\] job failed\n$/#
        #expect(text.wholeMatch(of: pattern) != nil, "\(text)")
    }

    @Test func theTimestampIsTheRealTimeToTheMillisecond() throws {
        let before = Date()
        let stamp = TextLogFormat.timestamp()
        let after = Date()
        let parsed = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(
            stamp.replacingOccurrences(of: #"([+-]\d\d)(\d\d)$"#, with: "$1:$2", options: .regularExpression))
        // Cut to the millisecond, never rounded up, never a coarse clock's second before.
        #expect(parsed >= before.addingTimeInterval(-0.001) && parsed <= after, "\(stamp)")
    }

    @Test func valuesThatCouldForgeAFieldAreQuoted() {
        let text = line("dead-lettering", metadata: ["type": "x job=FAKE reason=fine", "empty": "", "plain": "a-b.c"])
        #expect(text.contains(#"type="x job=FAKE reason=fine""#), "\(text)")
        #expect(text.contains(#"empty="""#))
        #expect(text.contains(" plain=a-b.c "))
        #expect(line("m", metadata: ["k": #"say "hi" \ bye"#]).contains(#"k="say \"hi\" \\ bye""#))
    }

    @Test func listsShowTheirElementsEachQuotedIfNeeded() {
        #expect(line("m", metadata: ["queues": ["a", "b c", "d=1"]]).contains(#"queues=[a,"b c","d=1"]"#))
    }

    @Test func controlCharactersCannotEndTheLine() {
        let text = line("job\nforged line", metadata: ["key": "a\nb\u{1B}[2J"])
        #expect(text.filter { $0 == "\n" }.count == 1)
        #expect(text.contains(#"job\nforged line"#))
        // Quoted for its `[`; the escapes are as they are unquoted.
        #expect(text.contains(#"key="a\nb\u{1B}[2J""#), "\(text)")
    }

    @Test func aBackslashPrintsApartFromAnEscapedControlCharacter() {
        let message = #"A\nB"# + "\nA\nB"
        let text = line("\(message)", metadata: ["error": .string(#"x: A\nB"# + " / A\nB")])
        #expect(text.contains(#"A\\nB\nA\nB"#), "\(text)")
        #expect(text.contains(#"error="x: A\\nB / A\nB""#), "\(text)")
    }
}
