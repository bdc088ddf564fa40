import Foundation
import Testing

@_spi(Fuzzing) @testable import Warren

/// The hand-written descriptor writer against `JSONEncoder`: the same bytes wherever it writes, and Foundation's
/// encoder (with its error) wherever it does not.
@Suite("JSONWriter for descriptors")
struct DescriptorWriterTests {
    private func expectSameBytes(
        _ descriptor: OperationDescriptor, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let written = try #require(
            JSONWriter.bytes(for: descriptor), "declined \(descriptor)", sourceLocation: sourceLocation)
        let expected = Array(try WireCoding.encoder.encode(descriptor))
        #expect(
            written == expected,
            "wrote \(String(decoding: written, as: UTF8.self))\nJSONEncoder \(String(decoding: expected, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    private static let now = Date(timeIntervalSince1970: 1_795_314_103.708)

    /// Every optional field, present or absent: 2⁹ descriptors.
    @Test(arguments: 0..<512)
    func writesWhatJSONEncoderWritesForEveryCombinationOfOptionalFields(_ mask: Int) throws {
        func has(_ bit: Int) -> Bool { mask & (1 << bit) != 0 }
        try expectSameBytes(
            OperationDescriptor(
                id: "job-1", type: "sum", input: has(0) ? ["numbers": [1, 2.5, "x"], "flag": true] : .null,
                priority: .veryHigh, sequence: 1_795_314_103_708_029, key: has(1) ? "totals" : nil,
                deadline: has(2) ? Self.now.addingTimeInterval(60) : nil,
                notBefore: has(6) ? Self.now.addingTimeInterval(30.5) : nil, createdAt: has(3) ? Self.now : nil,
                maxAttempts: has(4) ? 5 : nil, timeLimitSeconds: has(7) ? (mask % 2 == 0 ? 30 : 0.25) : nil,
                unique: has(8) ? mask % 3 != 0 : nil, dependencies: has(5) ? ["a", "b:c"] : nil,
                requireSuccess: has(5) ? mask % 2 == 0 : nil))
    }

    @Test func writesEmptyAndExtremeValuesAsJSONEncoderDoes() throws {
        try expectSameBytes(
            OperationDescriptor(
                id: "j", type: "", input: [:], priority: .veryLow, sequence: .max, key: "", deadline: nil,
                createdAt: nil, maxAttempts: .min, dependencies: [], requireSuccess: false))
        try expectSameBytes(OperationDescriptor(type: "t", input: [], sequence: 0, maxAttempts: .max))
        for timeLimit in [0.001, 1e-7, 31_536_000, 1e20, 0.1 + 0.2, 123456.789] {
            try expectSameBytes(OperationDescriptor(type: "t", sequence: 0, timeLimitSeconds: timeLimit))
        }
        for priority in JobPriority.allCases {
            try expectSameBytes(OperationDescriptor(type: "t", priority: priority, sequence: 1))
        }
    }

    @Test func writesStringsNeedingEscapesAsJSONEncoderDoes() throws {
        let awkward = WireSamples.awkwardCharacters.joined()
        try expectSameBytes(
            OperationDescriptor(
                id: "e", type: awkward, input: [awkward: .string(awkward)], sequence: 2, key: awkward,
                dependencies: [awkward, "\"", "\\", "/", "\u{0}"]))
    }

    @Test func writesWhatJSONEncoderWritesForRandomDescriptors() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<500 {
            var descriptor = WireSamples.descriptor(using: &generator)
            descriptor.dependencies = descriptor.dependencies.map { list in
                list.map { _ in WireSamples.string(using: &generator) }
            }
            descriptor.version = Int.random(in: -3...3, using: &generator)
            try expectSameBytes(descriptor)
        }
    }

    /// Read back as the Codable round trip reads it: the same descriptor, but for dates cut to milliseconds and -0.
    @Test func whatItWritesJobDecoderReadsBackAsTheCodableRoundTrip() throws {
        var generator = SeededGenerator(seed: 12)
        let decoder = JobDecoder()
        for _ in 0..<300 {
            let descriptor = WireSamples.descriptor(using: &generator)
            let written = try #require(JSONWriter.bytes(for: descriptor))
            #expect(try descriptor.encoded() == written)
            let read = try decoder.decode(written, contentType: WireCoding.contentType)
            let reference = try WireCoding.decoder.decode(
                OperationDescriptor.self, from: WireCoding.encoder.encode(descriptor))
            #expect(Identical.descriptors(read, reference), "\(reference) read back as \(read)")
            var withoutDates = descriptor
            withoutDates.deadline = read.deadline
            withoutDates.notBefore = read.notBefore
            withoutDates.createdAt = read.createdAt
            // `==`, not bits: -0 is written `0`, as JSONEncoder writes it.
            #expect(read == withoutDates, "\(descriptor) read back as \(read)")
        }
    }

    @Test func leavesDatesOutsideItsYearsToJSONEncoder() throws {
        let early = OperationDescriptor(type: "t", sequence: 1, createdAt: Date(timeIntervalSince1970: -12_300_000_000))
        #expect(JSONWriter.bytes(for: early) == nil)
        #expect(try early.encoded() == Array(try WireCoding.encoder.encode(early)))
        let late = OperationDescriptor(type: "t", sequence: 1, deadline: Date(timeIntervalSince1970: 253_402_300_800))
        #expect(JSONWriter.bytes(for: late) == nil)
        #expect(try late.encoded() == Array(try WireCoding.encoder.encode(late)))
    }

    @Test(arguments: [Double.infinity, -.infinity, .nan])
    func throwsJSONEncodersErrorForANumberThatIsNotFinite(_ number: Double) {
        let descriptor = OperationDescriptor(type: "t", input: ["x": [.number(number)]], sequence: 1)
        #expect(JSONWriter.bytes(for: descriptor) == nil)
        #expect(throws: EncodingError.self) { try descriptor.encoded() }
    }
}
