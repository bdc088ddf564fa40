import Foundation
import Testing

@_spi(Fuzzing) @testable import Warren

/// The fast descriptor reader against the Codable path: wherever it reads a descriptor, `JSONDecoder` must read the
/// identical one; and it must read the descriptors that matter instead of declining them all.
@Suite("DescriptorReader")
struct DescriptorReaderTests {
    private static func codable(_ bytes: [UInt8]) -> OperationDescriptor? {
        try? WireCoding.decoder.decode(OperationDescriptor.self, from: Data(bytes))
    }

    private static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(600), as: UTF8.self).debugDescription
    }

    /// The fast path reads `bytes`, to the very descriptor the Codable path reads.
    private func expectRead(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let read = DescriptorReader.descriptor(from: bytes, maxDepth: 64)
        let reference = Self.codable(bytes)
        #expect(read != nil, "declined \(Self.text(bytes))", sourceLocation: sourceLocation)
        #expect(reference != nil, "JSONDecoder refused \(Self.text(bytes))", sourceLocation: sourceLocation)
        if let read, let reference {
            #expect(
                Identical.descriptors(read, reference),
                "read \(read), JSONDecoder \(reference) from \(Self.text(bytes))",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: - What it must read

    @Test func readsEveryDescriptorWarrenWritesAsJSONDecoderDoes() throws {
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<400 {
            expectRead(try WireSamples.descriptor(using: &generator).encoded())
        }
    }

    @Test func readsThemWithWhitespaceBetweenEveryToken() throws {
        var generator = SeededGenerator(seed: 2)
        for _ in 0..<200 {
            let bytes = try WireSamples.descriptor(using: &generator).encoded()
            expectRead(WireSamples.withWhitespace(bytes, using: &generator))
        }
    }

    @Test func readsThemWithEveryKindOfEscape() throws {
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<200 {
            let bytes = try WireSamples.descriptor(using: &generator).encoded()
            let escaped = WireSamples.withEscapes(bytes, using: &generator)
            #expect(escaped != bytes)
            expectRead(escaped)
        }
    }

    static let readable = [
        #"{"version":1,"id":"a","type":"echo"}"#,
        " \t\r\n{ \"version\" :\n1 ,\t\"id\" : \"a\" , \"type\" : \"echo\" }\r\n ",
        #"{"type":"echo","id":"a","version":1,"input":{"numbers":[1,2]},"priority":"veryHigh","sequence":7,"key":"k"}"#,
        // Every optional field null, then every one present.
        #"""
        {"version":1,"id":"a","type":"echo","input":null,"priority":null,"sequence":null,"key":null,"deadline":null,
         "notBefore":null,"createdAt":null,"maxAttempts":null,"timeLimitSeconds":null,"unique":null,
         "dependencies":null,"requireSuccess":null}
        """#,
        #"""
        {"version":1,"id":"a","type":"echo","input":[],"priority":"low","sequence":18446744073709551615,"key":"",
         "deadline":"2030-01-02T03:04:05Z","notBefore":"2030-01-01T00:00:00.25+01:00","createdAt":1700000000.5,"maxAttempts":-3,"dependencies":["b","c"],
         "requireSuccess":false,"timeLimitSeconds":2.5,"unique":true}
        """#,
        #"{"version":1,"id":"a","type":"echo","dependencies":[],"requireSuccess":true,"maxAttempts":0}"#,
        // Time limits are any number, in any spelling: JobDecoder checks their range afterwards.
        #"{"version":1,"id":"a","type":"echo","timeLimitSeconds":30}"#,
        #"{"version":1,"id":"a","type":"echo","key":"k","unique":false}"#,
        #"{"version":1,"id":"a","type":"echo","timeLimitSeconds":1e-3}"#,
        #"{"version":1,"id":"a","type":"echo","timeLimitSeconds":-0.0}"#,
        #"{"version":1,"id":"a","type":"echo","timeLimitSeconds":0.1000000000000000055511151231257827}"#,
        // Escapes, surrogate pairs in both cases of hex, NUL, and a key written with escapes.
        #"{"\u0076ersion":1,"i\u0064":"a","type":"\u00e9e\u0301\uD83D\uDE00\ud83d\ude00\u0000\/\b\f\n\r\t\"\\","key":"é😀"}"#,
        // Unicode keys, including two that only look alike ("e" + combining acute is not "é" byte for byte).
        #"{"version":1,"id":"a","type":"echo","input":{"é":1,"ex\u0301":2,"\u212A":3,"":[],"n":{"a":[{"b":[[]]}]}}}"#,
        #"""
        {"version":1,"id":"a","type":"echo","input":[0,-0,-0.0,0.000,1.5,-1.5e-3,1E+2,1e22,1e23,
         123456789012345678901234567890,9007199254740993,1e308,5e-324,4.9e-324,2.2250738585072014e-308,
         1.7976931348623157e308,0.1000000000000000055511151231257827,123456789012345.6789,-9223372036854775808,
         18446744073709551616,1e-7,123e-2,0.5e1]}
        """#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-02T03:04:05.123456789+05:30","createdAt":"2030-01-02T03:04:05.1-17:59"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":1800000000,"createdAt":-1e9}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"1583-01-01T00:00:00Z","createdAt":"9999-12-31T23:59:59.999Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2024-02-29T23:59:59.999999999Z","createdAt":0}"#,
        // Unknown fields are ignored, even repeated ones, whatever they hold.
        #"{"version":1,"id":"a","type":"echo","traceparent":"00-abc","extra":[1,{"x":null}],"extra":true,"idx":{}}"#,
        // Read here; JobDecoder rejects them afterwards.
        #"{"version":2,"id":"a","type":"echo"}"#,
        #"{"version":1,"id":"not a valid id!","type":"echo"}"#,
    ]

    @Test(arguments: readable)
    func readsHandWrittenDescriptors(_ text: String) {
        expectRead(Array(text.utf8))
    }

    // MARK: - What it must leave to JSONDecoder

    static let declined = [
        // JSONDecoder refuses these, so the fast path must not read them.
        #"{"version":1,"id":"a"}"#,
        #"{"version":1,"id":null,"type":"echo"}"#,
        #"{"version":1,"id":7,"type":"echo"}"#,
        #"{"version":1,"id":"a","type":"echo","priority":"urgent"}"#,
        #"{"version":1,"id":"a","type":"echo","dependencies":[1]}"#,
        #"{"version":1,"id":"a","type":"echo","requireSuccess":"true"}"#,
        #"{"version":1,"id":"a","type":"echo","sequence":-1}"#,
        #"{"version":1,"id":"a","type":"echo","sequence":18446744073709551616}"#,
        #"{"version":1,"id":"a","type":"echo","sequence":1.5}"#,
        #"{"version":1,"id":"a","type":"echo","maxAttempts":9223372036854775808}"#,
        #"{"version":1,"id":"a","type":"echo","timeLimitSeconds":"30s"}"#,
        #"{"version":1,"id":"a","type":"echo","timeLimitSeconds":1e400}"#,
        #"{"version":1,"id":"a","type":"echo","input":1e400}"#,
        #"{"version":1,"id":"a","type":"echo","input":1e-400}"#,
        #"{"version":1,"id":"a","type":"echo","input":0e5}"#,
        #"{"version":1,"id":"a","type":"echo","input":01}"#,
        #"{"version":1,"id":"a","type":"echo","input":1.}"#,
        #"{"version":1,"id":"a","type":"echo","input":.5}"#,
        #"{"version":1,"id":"a","type":"echo","input":+1}"#,
        #"{"version":1,"id":"a","type":"echo","input":NaN}"#,
        #"{"version":1,"id":"a","type":"echo","input":"\ud83d"}"#,
        #"{"version":1,"id":"a","type":"echo","input":"\ude00"}"#,
        #"{"version":1,"id":"a","type":"echo","input":"\ud83dx"}"#,
        #"{"version":1,"id":"a","type":"echo","input":"\ud83d\u0041"}"#,
        #"{"version":1,"id":"a","type":"echo","input":"\x"}"#,
        #"{"version":1,"id":"a","type":"echo","input":"\u12"}"#,
        "{\"version\":1,\"id\":\"a\",\"type\":\"tab\there\"}",
        #"{"version":1,"id":"a","type":"echo","deadline":"next tuesday"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"99999-01-01T00:00:00Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":1e20}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:00"}"#,
        #"{"version":1,"id":"a","type":"echo"} x"#,
        #"{"version":1,"id":"a","type":"echo"}}"#,
        #"{"version":1,"id":"a","type":"echo",}"#,
        #"{"version":1,"id":"a","type":"echo""#,
        #"[{"version":1,"id":"a","type":"echo"}]"#,
        "",
        "{\"version\":1,\"id\":\"a\",\"type\":\"echo\"}\u{0}",
        // JSONDecoder reads these, but how it picks among repeated keys is its own affair.
        #"{"version":1,"id":"a","id":"b","type":"echo"}"#,
        #"{"version":1,"id":"a","type":"echo","key":null,"key":"k"}"#,
        #"{"version":1,"id":"a","type":"echo","input":{"x":1,"x":2}}"#,
        #"{"version":1,"id":"a","type":"echo","input":{"é":1,"e\u0301":2}}"#,
        #"{"version":1,"id":"a","type":"echo","input":{"\u212A":1,"K":2}}"#,
        // JSONDecoder reads these too; the fast path keeps to plainer forms. It reads unknown fields as JSON values
        // although JSONDecoder only scans them, so one it cannot hold declines the descriptor.
        #"{"version":1,"id":"a","type":"echo","idx":1e400}"#,
        // JSONDecoder reads an integer past 2^53 exactly however it is written; the fast path only when it is
        // written as one.
        #"{"version":1,"id":"a","type":"echo","input":9007199254740993.0}"#,
        #"{"version":1,"id":"a","type":"echo","input":-9.007199254740993e15}"#,
        #"{"version":1.0,"id":"a","type":"echo"}"#,
        #"{"version":1e0,"id":"a","type":"echo"}"#,
        #"{"version":1,"id":"a","type":"echo","sequence":-0}"#,
        #"{"version":1,"id":"a","type":"echo","sequence":10e-1}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:00z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T24:00:00Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-02-30T00:00:00Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:60Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:00Z "}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:00+0100"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:00+18:00"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"2030-01-01T00:00:00.1234567891Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"1582-12-31T00:00:00Z"}"#,
        #"{"version":1,"id":"a","type":"echo","deadline":"0001-01-01T00:00:00Z"}"#,
    ]

    @Test(arguments: declined)
    func leavesToJSONDecoder(_ text: String) {
        #expect(DescriptorReader.descriptor(from: Array(text.utf8), maxDepth: 64) == nil)
    }

    @Test(
        arguments: [
            [0xEF, 0xBB, 0xBF] + Array(#"{"version":1,"id":"a","type":"echo"}"#.utf8),  // a byte order mark
            Array(#"{"version":1,"id":"a","type":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
            Array(#"{"version":1,"id":"a","type":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),  // overlong "/"
            Array(#"{"version":1,"id":"a","type":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),  // a surrogate
            Array(#"{"version":1,"id":"a","type":"e","x":""#.utf8) + [0xC3] + Array(#""}"#.utf8),  // cut short
        ] as [[UInt8]])
    func leavesInvalidUTF8ToJSONDecoder(_ bytes: [UInt8]) {
        #expect(DescriptorReader.descriptor(from: bytes, maxDepth: 64) == nil)
    }

    @Test func declinesNestingDeeperThanTheLimit() {
        let body = { (depth: Int) in
            Array(
                (#"{"version":1,"id":"a","type":"echo","input":"#
                    + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}").utf8)
        }
        #expect(DescriptorReader.descriptor(from: body(63), maxDepth: 64) != nil)
        #expect(DescriptorReader.descriptor(from: body(64), maxDepth: 64) == nil)
        let dependencies = Array(#"{"version":1,"id":"a","type":"echo","dependencies":["b"]}"#.utf8)
        #expect(DescriptorReader.descriptor(from: dependencies, maxDepth: 2) != nil)
        #expect(DescriptorReader.descriptor(from: dependencies, maxDepth: 1) == nil)
        #expect(
            DescriptorReader.descriptor(from: Array(#"{"version":1,"id":"a","type":"e"}"#.utf8), maxDepth: 0) == nil)
    }

    // MARK: - Mutations

    /// Random damage to valid descriptors: whatever the fast path still reads, JSONDecoder must read identically.
    @Test func whateverItReadsFromDamagedDescriptorsJSONDecoderReadsIdentically() throws {
        var generator = SeededGenerator(seed: 4)
        let alphabet = Array(#"{}[]",:\0123456789-+.eEtrufalsn uU"#.utf8) + [0, 0x09, 0x7F, 0xC3, 0xA9, 0xFF]
        var read = 0
        var declined = 0
        for _ in 0..<3000 {
            var bytes = try WireSamples.descriptor(using: &generator).encoded()
            if Bool.random(using: &generator) { bytes = WireSamples.withEscapes(bytes, using: &generator) }
            for _ in 0...Int.random(in: 0...2, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes.remove(at: index)
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: index)
                case 2: bytes[index] = alphabet.randomElement(using: &generator)!
                default:
                    let end = min(index + Int.random(in: 1...12, using: &generator), bytes.count)
                    bytes.insert(contentsOf: bytes[index..<end], at: Int.random(in: 0..<bytes.count, using: &generator))
                }
            }
            guard let fast = DescriptorReader.descriptor(from: bytes, maxDepth: 64) else {
                declined += 1
                continue
            }
            read += 1
            let reference = try #require(Self.codable(bytes), "JSONDecoder refused \(Self.text(bytes))")
            #expect(
                Identical.descriptors(fast, reference),
                "read \(fast), JSONDecoder \(reference) from \(Self.text(bytes))")
        }
        // Both outcomes must be common, or the test proves little.
        #expect(read > 300)
        #expect(declined > 300)
    }

    // MARK: - After reading

    @Test func jobDecoderStillChecksWhatTheFastPathRead() throws {
        let version2 = Array(#"{"version":2,"id":"a","type":"echo"}"#.utf8)
        let badID = Array(#"{"version":1,"id":"not ok!","type":"echo"}"#.utf8)
        let dependencies = Array(#"{"version":1,"id":"a","type":"echo","dependencies":["b","c","d"]}"#.utf8)
        for body in [version2, badID, dependencies] {
            #expect(DescriptorReader.descriptor(from: body, maxDepth: 64) != nil)
        }
        let decoder = JobDecoder(maxDependencies: 2)
        #expect(
            throws: JobError(
                code: "unsupportedVersion",
                message: "descriptor version 2 is not supported; this worker reads version 1")
        ) {
            try decoder.decode(version2, contentType: nil)
        }
        let idError = try #require(throws: JobError.self) { try decoder.decode(badID, contentType: nil) }
        #expect(idError.code == "invalidDescriptor" && idError.message.hasPrefix("job id must be"))
        let dependencyError = try #require(throws: JobError.self) { try decoder.decode(dependencies, contentType: nil) }
        #expect(dependencyError.message == "the job has 3 dependencies; the limit is 2")
    }
}
