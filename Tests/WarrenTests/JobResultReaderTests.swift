import Foundation
import Testing

@_spi(Fuzzing) @testable import Warren

/// The fast result reader against the Codable path: wherever it reads a result or a batch, `JSONDecoder` must read
/// the identical one; and it must read what workers write instead of declining it all.
@Suite("JobResultReader")
struct JobResultReaderTests {
    private static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(600), as: UTF8.self).debugDescription
    }

    /// The fast path reads `bytes`, to the very result the Codable path reads.
    private func expectRead(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let read = JobResultReader.result(from: bytes)
        let reference = try? WireFastPaths.codableResult(bytes)
        #expect(read != nil, "declined \(Self.text(bytes))", sourceLocation: sourceLocation)
        #expect(reference != nil, "JSONDecoder refused \(Self.text(bytes))", sourceLocation: sourceLocation)
        if let read, let reference {
            #expect(
                Identical.results(read, reference), "read \(read), JSONDecoder \(reference) from \(Self.text(bytes))",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: - What it must read

    @Test func readsEveryResultWarrenWritesAsJSONDecoderDoes() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<400 {
            expectRead(try WireSamples.result(using: &generator).encoded())
        }
    }

    @Test func readsThemWithWhitespaceAndEscapes() throws {
        var generator = SeededGenerator(seed: 12)
        for _ in 0..<200 {
            let bytes = try WireSamples.result(using: &generator).encoded()
            expectRead(WireSamples.withWhitespace(bytes, using: &generator))
            expectRead(WireSamples.withEscapes(bytes, using: &generator))
        }
    }

    @Test func readsBatchesAsJSONDecoderDoes() throws {
        var generator = SeededGenerator(seed: 13)
        for size in 0..<60 {
            let results = try (0..<size % 7).map { _ in try WireSamples.result(using: &generator).encoded() }
            var body = ResultBatch.body(of: results)
            if size % 3 == 0 { body = WireSamples.withWhitespace(body, using: &generator) }
            let read = try #require(JobResultReader.batch(from: body), "declined \(Self.text(body))")
            let reference = try WireFastPaths.codableResultBatch(body)
            #expect(read.version == 1 && reference.version == 1)
            #expect(read.results.count == results.count && reference.results.count == results.count)
            for (fast, decoded) in zip(read.results, reference.results) {
                #expect(decoded.map { Identical.results(fast, $0) } == true, "read \(fast), JSONDecoder \(decoded)")
            }
        }
    }

    static let minimal =
        #""jobId":"j","sequence":0,"status":"succeeded","attempt":1,"redelivered":false,"workerId":"w""#

    @Test(arguments: [
        // Optional members as null, dates as Unix seconds, unknown members of every kind.
        #"{"version":1,\#(minimal),"timings":{},"type":null,"key":null,"output":null,"requeuedAt":null}"#,
        #"{"version":1,\#(minimal),"timings":{"enqueuedAt":1795314103.708,"startedAt":null}}"#,
        #"{"version":1,\#(minimal),"timings":{"finishedAt":"2030-01-01T00:00:00+01:00"},"extra":[{"a":null}]}"#,
        #"{"version":2,\#(minimal),"timings":{"later":true},"error":null,"cancellation":null}"#,
        // An error's code and message as written, even empty.
        #"{"version":1,\#(minimal),"timings":{},"error":{"code":"","message":"","retryable":false,"more":1}}"#,
        #"{"version":1,\#(minimal),"timings":{},"cancellation":{"reason":"r","message":"m"}}"#,
        #"{"version":1,\#(minimal),"timings":{},"output":{"n":[1,2.5,-0,1e3,"s",true,null]}}"#,
        // A member name with an escape.
        #"{"version":1,\#(minimal),"t\u0069mings":{}}"#,
    ])
    func readsWhatJSONDecoderReads(_ text: String) {
        expectRead(Array(text.utf8))
    }

    @Test(arguments: [
        #"{"version":1,\#(minimal)}"#,  // no timings
        #"{"version":1,\#(minimal),"timings":null}"#,
        #"{"version":1,\#(minimal),"timings":{},"version":1}"#,  // a member twice
        #"{"version":1,\#(minimal),"timings":{},"v\u0065rsion":1}"#,  // the same member, escaped
        #"{"version":1,\#(minimal),"timings":{},"status":"lost"}"#.replacingOccurrences(
            of: #""status":"succeeded","#, with: ""),  // an unknown status
        #"{"version":1.0,\#(minimal),"timings":{}}"#,
        #"{"version":null,\#(minimal),"timings":{}}"#,
        #"{"version":1,\#(minimal),"timings":{},"error":{"code":"c","message":"m"}}"#,  // no retryable
        #"{"version":1,\#(minimal),"timings":{"startedAt":"yesterday"}}"#,
        #"{"version":1,\#(minimal),"timings":{}} x"#,
        #"{"results":[1],"version":1}"#,
        #"{"results":[],"version":1,"results":[]}"#,
    ])
    func leavesToJSONDecoder(_ text: String) {
        #expect(JobResultReader.result(from: Array(text.utf8)) == nil)
        #expect(JobResultReader.batch(from: Array(text.utf8)) == nil)
    }

    /// A batch with one unreadable result is left to the Codable path, which reads the others and says what is
    /// wrong with that one.
    @Test func aBatchWithAnUnreadableResultIsReadResultByResult() throws {
        var generator = SeededGenerator(seed: 14)
        let good = try WireSamples.result(using: &generator).encoded()
        let body = ResultBatch.body(of: [good, Array(#"{"jobId":"bad"}"#.utf8), good])
        #expect(JobResultReader.batch(from: body) == nil)
        let results = ResultBatch.results(in: body, type: ResultBatch.messageType)
        #expect(results.count == 3)
        #expect((try? results[0].get()) != nil && (try? results[2].get()) != nil)
        #expect(throws: WarrenError.self) { try results[1].get() }
    }

    @Test func declinesNestingDeeperThanItsLimit() throws {
        func body(depth: Int) -> [UInt8] {
            Array(
                (#"{"version":1,\#(Self.minimal),"timings":{},"output":"#
                    + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}").utf8)
        }
        expectRead(body(depth: JobResultReader.maxDepth - 1))
        #expect(JobResultReader.result(from: body(depth: JobResultReader.maxDepth)) == nil)
        // JSONDecoder reads it all the same.
        #expect(try JobResult.decode(body(depth: JobResultReader.maxDepth)).jobID == "j")
    }
}
