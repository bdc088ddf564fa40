import Foundation

/// The hand-written descriptor reader, and result and descriptor writers, beside the Codable paths they stand in for, so that
/// `warren-fuzz` can check that they agree. Not for general use.
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
