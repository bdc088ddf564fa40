import Foundation

/// The hand-written descriptor and result readers, and result and descriptor writers, beside the Codable paths they
/// stand in for, so that `warren-fuzz` can check that they agree. Not for general use.
///
/// Thread safety: stateless.
@_spi(Fuzzing) public enum WireFastPaths {
    /// What ``JobDecoder`` reads from `body` without `JSONDecoder`, or `nil` where it leaves `body` to it.
    public static func handReadDescriptor(_ body: [UInt8], maxNestingDepth: Int) -> OperationDescriptor? {
        DescriptorReader.descriptor(from: body, maxDepth: maxNestingDepth)
    }

    /// What `JSONDecoder` reads from `body`, before ``JobDecoder``'s checks.
    public static func codableDescriptor(_ body: [UInt8]) throws -> OperationDescriptor {
        try WireCoding.decoder.decode(OperationDescriptor.self, from: Data(body))
    }

    /// What ``JobResult/decode(_:)`` reads from `body` without `JSONDecoder`, or `nil` where it leaves `body` to it.
    public static func handReadResult(_ body: [UInt8]) -> JobResult? {
        JobResultReader.result(from: body)
    }

    /// What `JSONDecoder` reads from `body` as a result.
    public static func codableResult(_ body: [UInt8]) throws -> JobResult {
        try WireCoding.decoder.decode(JobResult.self, from: Data(body))
    }

    /// The version and results ``ResultBatch/results(in:type:)`` reads from a batch without `JSONDecoder`, or
    /// `nil` where it leaves `body` to it.
    public static func handReadResultBatch(_ body: [UInt8]) -> (version: Int, results: [JobResult])? {
        JobResultReader.batch(from: body)
    }

    /// What `JSONDecoder` reads from `body` as a batch: its version and results, `nil` for each it cannot read.
    public static func codableResultBatch(_ body: [UInt8]) throws -> (version: Int, results: [JobResult?]) {
        let batch = try ResultBatch.decodedWithCodable(body)
        return (batch.version, batch.results.map { try? $0.get() })
    }

    /// What ``OperationDescriptor/encoded()`` writes without `JSONEncoder`, or `nil` where it leaves `descriptor` to it.
    public static func handWritten(_ descriptor: OperationDescriptor) -> [UInt8]? {
        JSONWriter.bytes(for: descriptor)
    }

    /// What `JSONEncoder` writes for `descriptor`.
    public static func encodedByJSONEncoder(_ descriptor: OperationDescriptor) throws -> [UInt8] {
        Array(try WireCoding.encoder.encode(descriptor))
    }

    /// What ``JobResult/encoded()`` writes without `JSONEncoder`, or `nil` where it leaves `result` to it.
    public static func handWritten(_ result: JobResult) -> [UInt8]? {
        JSONWriter.bytes(for: result)
    }

    /// What `JSONEncoder` writes for `result`.
    public static func encodedByJSONEncoder(_ result: JobResult) throws -> [UInt8] {
        Array(try WireCoding.encoder.encode(result))
    }
}
