import Foundation
import Testing

@testable import Warren

@Suite("JobDecoder limits")
struct JobDecoderLimitsTests {
    static func descriptor(input: String) -> [UInt8] {
        Array(#"{"version":1,"id":"job-1","type":"echo","input":\#(input)}"#.utf8)
    }

    static func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    @Test func aDependencyListedTwiceIsOne() throws {
        let body = Array(#"{"version":1,"id":"j","type":"sum","dependencies":["a","b","a","b","c"]}"#.utf8)
        #expect(try JobDecoder().decode(body, contentType: nil).dependencies == ["a", "b", "c"])
        // Counted once against the limit, too.
        let many = Array(#"{"version":1,"id":"j","type":"sum","dependencies":["a","a","a"]}"#.utf8)
        #expect(try JobDecoder(maxDependencies: 1).decode(many, contentType: nil).dependencies == ["a"])
    }

    @Test func theDefaultDepthLimitIs64() {
        #expect(JobDecoder().maxNestingDepth == 64)
        #expect(JobDecoder().maxMessageBytes == 1 << 20)
    }

    @Test func inputNestedUpToTheLimitDecodes() throws {
        // The descriptor object is level 1, so its input may nest 63 levels under the default limit of 64.
        let descriptor = try JobDecoder().decode(Self.descriptor(input: Self.nested(63)), contentType: nil)
        #expect(descriptor.id == "job-1")
    }

    @Test func inputNestedOneLevelTooDeepIsAnInvalidDescriptor() {
        let error = #expect(throws: JobError.self) {
            try JobDecoder().decode(Self.descriptor(input: Self.nested(64)), contentType: nil)
        }
        #expect(error?.code == "invalidDescriptor")
        #expect(error?.message.contains("deeper than the limit of 64 levels") == true, "\(error?.message ?? "")")
    }

    @Test func aHundredThousandOpenBracketsAreRejectedByTheDepthCheck() {
        let body = Array(repeating: UInt8(ascii: "["), count: 100_000)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect(error?.message.contains("level 65 opens at byte 64") == true, "\(error?.message ?? "")")
    }

    @Test func theLimitIsConfigurable() throws {
        let decoder = JobDecoder(maxNestingDepth: 3)
        _ = try decoder.decode(Self.descriptor(input: Self.nested(2)), contentType: nil)
        let error = #expect(throws: JobError.self) {
            try decoder.decode(Self.descriptor(input: Self.nested(3)), contentType: nil)
        }
        #expect(error?.message.contains("limit of 3 levels") == true)
    }

    @Test func bracketsInsideStringsDoNotCount() throws {
        let text = #""[[[[{{{{ \" [[[[ \\""#
        let descriptor = try JobDecoder(maxNestingDepth: 2).decode(
            Self.descriptor(input: "[\(text)]"), contentType: nil)
        #expect(descriptor.input == .array([.string(#"[[[[{{{{ " [[[[ \"#)]))
    }

    @Test func theSizeLimitComesBeforeTheDepthLimit() {
        let body = Array(repeating: UInt8(ascii: "{"), count: 2000)
        let error = #expect(throws: JobError.self) {
            try JobDecoder(maxMessageBytes: 1000).decode(body, contentType: nil)
        }
        #expect(error?.code == "oversized")
    }

    @Test func errorMessagesQuotingHugeValuesAreShortened() {
        let huge = String(repeating: "p", count: 500_000)
        let body = Array(#"{"version":1,"id":"a","type":"echo","priority":"\#(huge)"}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect((error?.message.unicodeScalars.count ?? .max) <= JobError.maxMessageLength)
        let contentType = String(repeating: "t", count: 10_000)
        let typeError = #expect(throws: JobError.self) {
            try JobDecoder().decode(Array("{}".utf8), contentType: contentType)
        }
        #expect((typeError?.message.count ?? .max) < 200)
    }

    @Test(arguments: [#""deadline":-1e12"#, #""deadline":1e20"#, #""createdAt":"99999-01-01T00:00:00Z""#])
    func datesOutsideYears1To9999AreInvalid(_ field: String) {
        let body = Array(#"{"version":1,"id":"a","type":"echo",\#(field)}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect(error?.message.contains("date out of range") == true, "\(error?.message ?? "")")
    }

    @Test func datesAtTheEdgesOfTheRangeRoundTrip() throws {
        for field in [#""createdAt":"0001-01-01T00:00:00Z""#, #""createdAt":"9999-12-31T23:59:59.999Z""#] {
            let body = Array(#"{"version":1,"id":"a","type":"echo",\#(field)}"#.utf8)
            let descriptor = try JobDecoder().decode(body, contentType: nil)
            _ = try JobDecoder().decode(try descriptor.encoded(), contentType: nil)
        }
    }

    @Test func jobErrorsCutLongCodesAndMessagesIncludingGraphemeBombs() {
        let error = JobError(code: String(repeating: "c", count: 5000), message: String(repeating: "m", count: 500_000))
        #expect(error.code.unicodeScalars.count == JobError.maxCodeLength)
        #expect(error.message.unicodeScalars.count == JobError.maxMessageLength)
        #expect(error.message.hasSuffix("…"))
        // One character of 100,000 combining marks: a character count would let it through whole.
        let bomb = JobError(code: "x", message: "e" + String(repeating: "\u{301}", count: 100_000))
        #expect(bomb.message.utf8.count <= 4 * JobError.maxMessageLength)
        let short = JobError(code: "diskFull", message: "no space left")
        #expect(short.code == "diskFull" && short.message == "no space left")
    }

    @Test func controlMessagesDecodeThroughThePublicDecoder() throws {
        let message = try ControlMessage.decode(
            Array(#"{"version":1,"kind":"cancel","jobIds":["a"],"sentAt":1795314103.5}"#.utf8))
        #expect(message.jobIDs == ["a"])
        #expect(message.reason == "requested")
        #expect(throws: DecodingError.self) { try ControlMessage.decode(Array("[".utf8)) }
    }

    @Test func theNestingScanIgnoresUnbalancedClosingBrackets() {
        #expect(JSONNesting.offsetBeyond(limit: 2, in: Array("]]]]}}[[".utf8)) == nil)
        #expect(JSONNesting.offsetBeyond(limit: 2, in: Array("]][[[".utf8)) == 4)
        #expect(JSONNesting.offsetBeyond(limit: 1, in: Array(#"["\\"]["#.utf8)) == nil)
    }
}

@Suite("JobDecoder numbers out of range")
struct JobDecoderNumberTests {
    @Test(arguments: ["-1", "18446744073709551616", "1.5"])
    func aSequenceThatIsNoUInt64IsNamed(_ sequence: String) {
        let body = Array(#"{"version":1,"id":"a","type":"echo","sequence":\#(sequence)}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect(error?.message.contains("descriptor.sequence") == true, "\(error?.message ?? "")")
    }

    @Test(arguments: [("2.5", "2.5"), ("1e30", "1e+30")])
    func maxAttemptsThatIsNoIntIsNamed(_ attempts: String, _ shown: String) {
        let body = Array(#"{"version":1,"id":"a","type":"echo","maxAttempts":\#(attempts)}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect(
            error?.message
                == "not a valid operation descriptor: descriptor.maxAttempts: \(shown) is not an integer from "
                + "\(Int.min) to \(Int.max)")
    }

    @Test(arguments: [("0", "0.0"), ("-1", "-1.0"), ("0.0009", "0.0009"), ("31536000.5", "31536000.5")])
    func aTimeLimitOutsideAMillisecondToAYearIsNamed(_ limit: String, _ shown: String) {
        let body = Array(#"{"version":1,"id":"a","type":"echo","timeLimitSeconds":\#(limit)}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect(
            error?.message
                == "timeLimitSeconds: a time limit must be from 1 ms to a year (0.001 to 31536000 seconds); "
                + "got \(shown) seconds")
    }

    @Test(arguments: [#""30s""#, "true", "[30]"])
    func aTimeLimitThatIsNoNumberIsNamed(_ limit: String) {
        let body = Array(#"{"version":1,"id":"a","type":"echo","timeLimitSeconds":\#(limit)}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error?.code == "invalidDescriptor")
        #expect(error?.message.contains("timeLimitSeconds") == true, "\(error?.message ?? "")")
    }

    @Test func theTimeLimitsAtTheEndsOfTheRangeDecode() throws {
        for limit in ["0.001", "31536000", "1e-3"] {
            let body = Array(#"{"version":1,"id":"a","type":"echo","timeLimitSeconds":\#(limit)}"#.utf8)
            #expect(try JobDecoder().decode(body, contentType: nil).timeLimitSeconds == Double(limit))
        }
    }

    @Test(arguments: [
        (#""unique":true"#, "unique: a unique job needs a key: its lock is the key's"),
        (
            #""unique":true,"key":"""#,
            "unique: a unique job's key must be 1 to 241 bytes long (its lock is a queue "
                + "named 'warren.unique.KEY'); got 0 bytes"
        ),
        (
            #""unique":true,"key":"\#(String(repeating: "é", count: 121))""#,
            "unique: a unique job's key must be 1 to "
                + "241 bytes long (its lock is a queue named 'warren.unique.KEY'); got 242 bytes"
        ),
    ])
    func aUniqueJobWithoutAFittingKeyIsNamed(_ fields: String, _ message: String) {
        let body = Array(#"{"version":1,"id":"a","type":"echo",\#(fields)}"#.utf8)
        let error = #expect(throws: JobError.self) { try JobDecoder().decode(body, contentType: nil) }
        #expect(error == JobError(code: "invalidDescriptor", message: message))
    }

    @Test func aUniqueJobWithAKeyOfUpTo241BytesDecodes() throws {
        for key in ["k", String(repeating: "k", count: 241), String(repeating: "é", count: 120) + "k"] {
            let body = Array(#"{"version":1,"id":"a","type":"echo","key":"\#(key)","unique":true}"#.utf8)
            let descriptor = try JobDecoder().decode(body, contentType: nil)
            #expect(descriptor.unique == true && descriptor.key == key)
        }
        // Not unique: no lock, so no key is needed.
        let plain = Array(#"{"version":1,"id":"a","type":"echo","unique":false}"#.utf8)
        #expect(try JobDecoder().decode(plain, contentType: nil).unique == false)
    }

    @Test func theLargestSequenceDecodes() throws {
        let body = Array(#"{"version":1,"id":"a","type":"echo","sequence":18446744073709551615}"#.utf8)
        #expect(try JobDecoder().decode(body, contentType: nil).sequence == UInt64.max)
    }

    @Test func moreDependenciesThanTheLimitIsAnInvalidDescriptor() throws {
        let ids = (0..<3).map { "\"d\($0)\"" }.joined(separator: ",")
        let body = Array(#"{"version":1,"id":"j","type":"echo","dependencies":[\#(ids)]}"#.utf8)
        #expect(try JobDecoder(maxDependencies: 3).decode(body, contentType: nil).dependencies?.count == 3)
        #expect(JobDecoder().maxDependencies == 100)
        let error = try #require(throws: JobError.self) {
            try JobDecoder(maxDependencies: 2).decode(body, contentType: nil)
        }
        #expect(error.code == "invalidDescriptor")
        #expect(error.message == "the job has 3 dependencies; the limit is 2")
    }
}
