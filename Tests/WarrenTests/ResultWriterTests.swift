import Foundation
import Testing

@testable import Warren

/// The hand-written result writer against `JSONEncoder`: the same bytes wherever it writes, and Foundation's
/// encoder (with its error) wherever it does not.
@Suite("ResultWriter")
struct ResultWriterTests {
    private static func foundationBytes(_ result: JobResult) throws -> [UInt8] {
        Array(try WireCoding.encoder.encode(result))
    }

    private func expectSameBytes(_ result: JobResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let written = try #require(
            JSONWriter.bytes(for: result), "declined \(result)", sourceLocation: sourceLocation)
        let expected = try Self.foundationBytes(result)
        #expect(
            written == expected,
            "wrote \(String(decoding: written, as: UTF8.self))\nJSONEncoder \(String(decoding: expected, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    private static func result(
        status: JobStatus, output: JSONValue? = nil, text: String = "x", timings: JobTimings = JobTimings()
    ) -> JobResult {
        JobResult(
            jobID: "job-\(text)", type: text, sequence: 1_795_314_103_708_029, key: text, status: status,
            output: status == .succeeded ? output : nil,
            error: status == .failed ? JobError(code: text, message: "failed: \(text)", retryable: true) : nil,
            cancellation: status == .cancelled ? Cancellation(reason: text, message: "cancelled: \(text)") : nil,
            attempt: 3, redelivered: true, workerID: "host-\(text)", timings: timings)
    }

    @Test(arguments: JobStatus.allCases)
    func writesWhatJSONEncoderWritesForEveryStatus(_ status: JobStatus) throws {
        let now = Date(timeIntervalSince1970: 1_795_314_103.708)
        var everything = Self.result(
            status: status, output: ["sum": 3, "formattedSum": "3", "nested": [[], [:], [1.5, nil, true]]],
            timings: JobTimings(enqueuedAt: now, receivedAt: now, startedAt: now, finishedAt: now))
        everything.requeuedAt = now
        try expectSameBytes(everything)
        // Every optional left out.
        try expectSameBytes(
            JobResult(
                jobID: "j", type: nil, sequence: 0, key: nil, status: status, attempt: -1, workerID: "w",
                timings: JobTimings()))
    }

    @Test func writesWhatJSONEncoderWritesForRandomResults() throws {
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<500 {
            func maybeDate() -> Date? {
                Bool.random(using: &generator) ? WireSamples.date(using: &generator) : nil
            }
            var result = Self.result(
                status: JobStatus.allCases.randomElement(using: &generator)!,
                output: Bool.random(using: &generator) ? WireSamples.value(using: &generator) : .null,
                text: WireSamples.string(using: &generator),
                timings: JobTimings(
                    enqueuedAt: maybeDate(), receivedAt: maybeDate(), startedAt: maybeDate(), finishedAt: maybeDate()))
            result.sequence = .random(in: 0 ... .max, using: &generator)
            result.attempt = .random(in: .min ... .max, using: &generator)
            result.redelivered = .random(using: &generator)
            result.requeuedAt = maybeDate()
            try expectSameBytes(result)
        }
    }

    @Test func escapesEveryASCIICharacterAsJSONEncoderDoes() throws {
        let ascii = String(String.UnicodeScalarView((0..<0x80).map { Unicode.Scalar(UInt8($0)) }))
        try expectSameBytes(Self.result(status: .succeeded, output: [ascii: .string(ascii)], text: ascii))
        for character in WireSamples.awkwardCharacters {
            try expectSameBytes(Self.result(status: .failed, text: character))
        }
    }

    @Test func sortsObjectKeysAsJSONEncoderDoes() throws {
        let keys = [
            "", "A", "B", "Z", "_", "a", "a-", "a10", "a9", "ab", "ex\u{301}", "z", "~", "ä", "é", "\u{212A}",
            "\u{FF21}", "😀", "👩‍👩‍👧", "\u{10FFFF}",
        ]
        let output = JSONValue.object(Dictionary(uniqueKeysWithValues: keys.map { ($0, JSONValue.null) }))
        try expectSameBytes(Self.result(status: .succeeded, output: output))
    }

    @Test func printsNumbersAsJSONEncoderDoes() throws {
        var generator = SeededGenerator(seed: 6)
        let numbers = (0..<2000).map { _ in JSONValue.number(WireSamples.number(using: &generator)) }
        try expectSameBytes(Self.result(status: .succeeded, output: .array(numbers)))
        let edges: [Double] = [
            -0.0, 0.1, 1e15, 1e16, 0x1p53 + 2, 9.223372036854775807e18, -9.223372036854775808e18,
            1e20, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
            .leastNormalMagnitude,
        ]
        try expectSameBytes(Self.result(status: .succeeded, output: .array(edges.map(JSONValue.number))))
    }

    @Test func writesDatesAsJSONEncoderDoes() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            // Whole milliseconds, and values a hair either side of them, where cutting and rounding differ.
            let milliseconds = Double(Int64.random(in: -11_676_096_000_000...253_370_764_800_000, using: &generator))
            let nudge = [0, 1e-7, -1e-7, 0.0004999, 0.0005, 0.0009999].randomElement(using: &generator)!
            let date = Date(timeIntervalSince1970: milliseconds / 1000 + nudge)
            try expectSameBytes(
                Self.result(
                    status: .succeeded,
                    timings: JobTimings(
                        enqueuedAt: date, receivedAt: WireSamples.date(using: &generator),
                        startedAt: Date(timeIntervalSinceReferenceDate: Double.random(in: -2...2, using: &generator)))))
        }
        let edges = [
            Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0001),
            Date(timeIntervalSinceReferenceDate: -1e-9), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -0.0005), Date(timeIntervalSince1970: 253_402_300_799.999),
            Date(timeIntervalSince1970: 951_782_400.5),  // 2000-02-29
            Date(timeIntervalSince1970: -12_212_553_600),  // 1583-01-01
        ]
        for date in edges {
            try expectSameBytes(Self.result(status: .succeeded, timings: JobTimings(finishedAt: date)))
        }
    }

    @Test func whatItWritesDecodesToAnEqualResult() throws {
        var generator = SeededGenerator(seed: 8)
        for _ in 0..<300 {
            // Eighths of a second survive the millisecond format exactly, so the whole result can compare equal.
            let date = Date(timeIntervalSince1970: Double(Int.random(in: 0...16_000_000_000, using: &generator)) / 8)
            let result = Self.result(
                status: JobStatus.allCases.randomElement(using: &generator)!,
                output: WireSamples.value(using: &generator), text: WireSamples.string(using: &generator),
                timings: JobTimings(enqueuedAt: date, startedAt: date))
            let decoded = try JobResult.decode(try #require(JSONWriter.bytes(for: result)))
            var expected = result
            // A null output is written, and reads back as no output: the Codable path does the same.
            if case .null? = expected.output { expected.output = nil }
            #expect(decoded == expected)
        }
    }

    // MARK: - Left to JSONEncoder

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func leavesNumbersThatAreNotFiniteToJSONEncoder(_ number: Double) {
        let result = Self.result(status: .succeeded, output: ["x": [.number(number)]])
        #expect(JSONWriter.bytes(for: result) == nil)
        #expect(throws: EncodingError.self) { try result.encoded() }
    }

    @Test(arguments: [-12_212_553_601.0, -62_135_596_800, 253_402_300_800])  // 1582, year 1, year 10000
    func leavesDatesOutsideItsYearsToJSONEncoder(_ seconds: Double) throws {
        let result = Self.result(
            status: .succeeded, timings: JobTimings(startedAt: Date(timeIntervalSince1970: seconds)))
        #expect(JSONWriter.bytes(for: result) == nil)
        #expect(try result.encoded() == Self.foundationBytes(result))
    }
}

@Suite("Result message type")
struct ResultMessageTypeTests {
    /// Wire format §3: the `type` property of a result is `warren.result.` and its status.
    @Test(arguments: JobStatus.allCases)
    func typeNamesTheStatus(status: JobStatus) {
        #expect(status.messageType == "warren.result.\(status.rawValue)")
    }
}
