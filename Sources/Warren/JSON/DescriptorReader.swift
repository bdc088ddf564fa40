import Foundation

/// The fast path of ``JobDecoder``: reads a well-formed descriptor straight from its bytes, to the very
/// ``OperationDescriptor`` that `JSONDecoder` with ``WireCoding/decoder`` would make of them, or returns `nil`.
///
/// It returns `nil` (declines) for anything it does not read exactly as the Codable path does, which then decodes
/// the message and explains what is wrong with it:
/// - anything ``JSONScanner`` declines (invalid JSON or UTF-8, lone surrogates, inexact numbers, repeated keys in
///   `input`), and nesting deeper than the limit;
/// - a field given twice, a field of the wrong type, `null` for `version`, `id` or `type`, an unknown priority;
/// - `version`, `maxAttempts` or `sequence` written with a fraction or exponent (`1.0`, `1e0`), or as `-0`;
/// - a date string other than `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` in years 1583 … 9999 (``ISO8601Date``),
///   and any date outside the years the wire format accepts;
/// - a byte order mark, or anything but whitespace after the object.
///
/// Unknown fields are ignored, as the Codable path ignores them, once read as JSON. The checks that follow decoding
/// (version, id, number of dependencies) are ``JobDecoder``'s, for both paths.
///
/// Thread safety: stateless.
enum DescriptorReader {
    /// The descriptor in `body`, or `nil` where the Codable path must decide.
    /// - Parameter maxDepth: The deepest nesting of arrays and objects to read; the descriptor object is level 1.
    static func descriptor(from body: [UInt8], maxDepth: Int) -> OperationDescriptor? {
        guard maxDepth >= 1 else { return nil }
        return body.withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes, maxDepth: maxDepth)
            return try? readDescriptor(&scanner)
        }
    }

    private static func readDescriptor(_ scanner: inout JSONScanner) throws -> OperationDescriptor {
        var version: Int?
        var id: String?
        var type: String?
        var input = JSONValue.null
        var priority = JobPriority.normal
        var sequence: UInt64 = 0
        var key: String?
        var deadline: Date?
        var notBefore: Date?
        var createdAt: Date?
        var maxAttempts: Int?
        var timeLimitSeconds: Double?
        var unique: Bool?
        var dependencies: [String]?
        var requireSuccess: Bool?

        try scanner.readMembers(ofObjectAt: 1, fields) { scanner, index in
            let field = keys[index]
            // `null` reads as absent (the Codable path uses decodeIfPresent), except for required fields.
            if scanner.consumeNull() {
                guard field != .version, field != .id, field != .type else { throw JSONScanner.Decline() }
                return
            }
            switch field {
            case .version: version = try scanner.readInt()
            case .id: id = try scanner.readString()
            case .type: type = try scanner.readString()
            case .input: input = try scanner.readValue(depth: 1)
            case .priority:
                guard let named = JobPriority(rawValue: try scanner.readString()) else { throw JSONScanner.Decline() }
                priority = named
            case .sequence: sequence = try scanner.readUInt64()
            case .key: key = try scanner.readString()
            case .deadline: deadline = try scanner.readDate()
            case .notBefore: notBefore = try scanner.readDate()
            case .createdAt: createdAt = try scanner.readDate()
            case .maxAttempts: maxAttempts = try scanner.readInt()
            case .timeLimitSeconds: timeLimitSeconds = try scanner.readDouble()
            case .unique: unique = try scanner.readBool()
            case .dependencies:
                var ids: [String] = []
                try scanner.readArray(depth: 2) { ids.append(try $0.readString()) }
                dependencies = ids
            case .requireSuccess: requireSuccess = try scanner.readBool()
            }
        }
        scanner.skipWhitespace()
        guard scanner.isAtEnd, let version, let id, let type else { throw JSONScanner.Decline() }
        var descriptor = OperationDescriptor(
            id: id, type: type, input: input, priority: priority, sequence: sequence, key: key, deadline: deadline,
            notBefore: notBefore, createdAt: createdAt, maxAttempts: maxAttempts, timeLimitSeconds: timeLimitSeconds,
            unique: unique, dependencies: dependencies, requireSuccess: requireSuccess)
        descriptor.version = version
        return descriptor
    }

    /// The fields, in the order of ``fields``.
    private static let keys = OperationDescriptor.CodingKeys.allCases
    private static let fields = WireFieldNames(keys.map(\.rawValue))
}
