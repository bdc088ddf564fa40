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

        var seen: UInt32 = 0
        try scanner.expect("{")
        if !scanner.consume("}") {
            repeat {
                let plainName = try scanner.readPlainASCIIString()
                let index = try plainName.map(fieldIndex(bytes:)) ?? fieldIndex(named: scanner.readString())
                try scanner.expect(":")
                guard let index else {
                    _ = try scanner.readValue(depth: 1)
                    continue
                }
                let bit: UInt32 = 1 << index
                guard seen & bit == 0 else { throw JSONScanner.Decline() }
                seen |= bit
                let field = fields[index].key
                // `null` reads as absent (the Codable path uses decodeIfPresent), except for required fields.
                if scanner.consumeNull() {
                    guard field != .version, field != .id, field != .type else { throw JSONScanner.Decline() }
                    continue
                }
                switch field {
                case .version: version = try scanner.readInt()
                case .id: id = try scanner.readString()
                case .type: type = try scanner.readString()
                case .input: input = try scanner.readValue(depth: 1)
                case .priority:
                    guard let named = JobPriority(rawValue: try scanner.readString()) else {
                        throw JSONScanner.Decline()
                    }
                    priority = named
                case .sequence: sequence = try scanner.readUInt64()
                case .key: key = try scanner.readString()
                case .deadline: deadline = try readDate(&scanner)
                case .notBefore: notBefore = try readDate(&scanner)
                case .createdAt: createdAt = try readDate(&scanner)
                case .maxAttempts: maxAttempts = try scanner.readInt()
                case .timeLimitSeconds: timeLimitSeconds = try scanner.readDouble()
                case .unique: unique = try scanner.readBool()
                case .dependencies:
                    var ids: [String] = []
                    try scanner.readArray(depth: 2) { ids.append(try $0.readString()) }
                    dependencies = ids
                case .requireSuccess: requireSuccess = try scanner.readBool()
                }
            } while scanner.consume(",")
            try scanner.expect("}")
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

    /// The fields and their names' bytes; a field's index here is its bit in the set of fields seen.
    private static let fields = OperationDescriptor.CodingKeys.allCases.map { (key: $0, name: Array($0.rawValue.utf8)) }

    /// The index in ``fields`` of the field called `name`, matched as JSONDecoder matches keys: by Swift string
    /// equality, which holds for equal bytes (the cheap test) and for canonically equivalent ones too.
    private static func fieldIndex(named name: String) -> Int? {
        var bytes = name
        if let index = bytes.withUTF8(fieldIndex(bytes:)) { return index }
        return OperationDescriptor.CodingKeys(rawValue: name).flatMap { key in fields.firstIndex { $0.key == key } }
    }

    /// The index in ``fields`` of the field whose name is these very bytes. For a name in plain ASCII, as every
    /// field's is, no other spelling is equal as a Swift string: `nil` means an unknown field.
    private static func fieldIndex(bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        fields.firstIndex { field in
            field.name.count == bytes.count
                && field.name.withUnsafeBufferPointer { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
        }
    }

    /// A date as ``WireCoding/decoder`` reads it: Unix seconds, or an ISO 8601 string, in the wire format's years.
    private static func readDate(_ scanner: inout JSONScanner) throws -> Date {
        let date: Date
        if scanner.isAtString() {
            // Plain ASCII, as Warren writes dates, is parsed where it lies; an escaped one is unescaped first.
            let parsed: Date?
            if let plain = try scanner.readPlainASCIIString() {
                parsed = ISO8601Date.date(parsing: plain)
            } else {
                var text = try scanner.readString()
                parsed = text.withUTF8 { ISO8601Date.date(parsing: $0) }
            }
            guard let parsed else { throw JSONScanner.Decline() }
            date = parsed
        } else {
            date = Date(timeIntervalSince1970: try scanner.readDouble())
        }
        guard WireCoding.dateRange.contains(date.timeIntervalSince1970) else { throw JSONScanner.Decline() }
        return date
    }
}
