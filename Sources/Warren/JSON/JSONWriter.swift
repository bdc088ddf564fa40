import Foundation

/// Writes JSON as the very bytes ``WireCoding/encoder`` writes, without `JSONEncoder`'s cost on every job: the
/// primitives that ``JSONWriter/bytes(for:)-(JobResult)`` and ``JSONWriter/bytes(for:)-(OperationDescriptor)``
/// put together, each object's keys in the sorted order `JSONEncoder`'s `.sortedKeys` writes.
///
/// Keys sorted by their UTF-8 bytes, no whitespace, `/` and non-ASCII unescaped, control characters escaped as
/// `JSONEncoder` escapes them, whole numbers without a fraction (``JSONValue``'s rule), other numbers as
/// `JSONEncoder` prints a `Double`, and dates as ``ISO8601Date`` writes them.
///
/// A primitive throws ``Decline`` where it cannot promise the same bytes, and the caller then uses `JSONEncoder`:
/// a date outside the years 1583 … 9999, and a number that is not finite (which `JSONEncoder` refuses). The tests
/// and the fuzzer compare its bytes with `JSONEncoder`'s.
///
/// Thread safety: a value type used by one thread.
struct JSONWriter {
    struct Decline: Error {}

    private(set) var bytes: [UInt8] = []

    /// Runs `write` on a new writer, and returns its bytes, or `nil` where it declined.
    static func bytes(reserving capacity: Int, _ write: (inout JSONWriter) throws -> Void) -> [UInt8]? {
        var writer = JSONWriter()
        writer.bytes.reserveCapacity(capacity)
        do {
            try write(&writer)
        } catch {
            return nil
        }
        return writer.bytes
    }

    mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
    }

    /// An array of strings, as `[String]` encodes.
    mutating func array(_ strings: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (index, element) in strings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A member that is a date, left out when `date` is `nil` (as the synthesised `encode(to:)` leaves it out).
    mutating func date(_ name: StaticString, _ date: Date?) throws {
        guard let date else { return }
        key(name)
        guard ISO8601Date.append(date, to: &bytes) else { throw Decline() }
    }

    /// A JSON value as ``JSONValue/encode(to:)`` and `JSONEncoder` write it.
    mutating func value(_ value: JSONValue) throws {
        switch value {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let flag):
            bool(flag)
        case .number(let number):
            try self.number(number)
        case .integer(let number):
            integer(number)
        case .string(let text):
            string(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                try self.value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            beginObject()
            for (name, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                key(named: name)
                try self.value(member)
            }
            endObject()
        }
    }

    mutating func number(_ number: Double) throws {
        if number.rounded() == number, let integer = Int64(exactly: number) {
            self.integer(integer)
            return
        }
        guard number.isFinite else { throw Decline() }
        bytes.append(contentsOf: Self.text(of: number).utf8)
    }

    /// A finite `number` as JSON text, the way JSONEncoder prints a Double: its description without a trailing
    /// ".0" (-1, 1e+20, 0.1, 5e-324).
    static func text(of number: Double) -> String {
        if number.rounded() == number, let integer = Int64(exactly: number) { return String(integer) }
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    /// A member's name and colon, after a comma unless it is the object's first: a name written in the code, which
    /// needs no escape (plain ASCII letters), so it goes in as it is.
    mutating func key(_ name: StaticString) {
        if bytes.last != UInt8(ascii: "{") { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// A member's name and colon, after a comma unless it is the object's first: any name, escaped as needed.
    mutating func key(named name: String) {
        if bytes.last != UInt8(ascii: "{") { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func bool(_ flag: Bool) {
        bytes.append(contentsOf: flag ? "true".utf8 : "false".utf8)
    }

    mutating func integer(_ value: some BinaryInteger) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = UInt64(value.magnitude)
        // Digits from the last, into a buffer as long as the longest UInt64, then in one append.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Runs of bytes that need no escape go in whole.
            var plainStart = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart..<index]))
                escape(byte)
                plainStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A quote, backslash or control character, escaped as JSONEncoder escapes it.
    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
        case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
        case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
        case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
        case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
        case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
        default:
            bytes.append(contentsOf: #"\u00"#.utf8)
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0xF)])
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
