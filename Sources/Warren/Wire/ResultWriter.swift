import Foundation

/// Writes a ``JobResult`` as the very bytes ``WireCoding/encoder`` writes for it, without `JSONEncoder`'s cost on
/// every job: keys sorted by their UTF-8 bytes, no whitespace, `/` and non-ASCII unescaped, control characters
/// escaped as `JSONEncoder` escapes them, whole numbers without a fraction (``JSONValue``'s rule), other numbers as
/// `JSONEncoder` prints a `Double`, and dates as ``ISO8601Date`` writes them.
///
/// It returns `nil` where it cannot promise the same bytes, and ``JobResult/encoded()`` then uses `JSONEncoder`: a
/// date outside the years 1583 … 9999, and a number that is not finite (which `JSONEncoder` refuses). The tests and
/// the fuzzer compare its bytes with `JSONEncoder`'s.
///
/// Thread safety: a value type used by one thread.
struct ResultWriter {
    private struct Decline: Error {}

    private var bytes: [UInt8] = []

    /// The JSON body of `result`, or `nil` where `JSONEncoder` must write it.
    static func bytes(for result: JobResult) -> [UInt8]? {
        var writer = ResultWriter()
        writer.bytes.reserveCapacity(512)
        do {
            try writer.write(result)
        } catch {
            return nil
        }
        return writer.bytes
    }

    // Every object below lists its keys in sorted order, as JSONEncoder's `.sortedKeys` writes them; an optional
    // that is `nil` is left out, as the synthesised `encode(to:)` leaves it out.
    private mutating func write(_ result: JobResult) throws {
        bytes.append(UInt8(ascii: "{"))
        key("attempt")
        integer(result.attempt)
        if let cancellation = result.cancellation {
            key("cancellation")
            bytes.append(UInt8(ascii: "{"))
            key("message")
            string(cancellation.message)
            key("reason")
            string(cancellation.reason)
            bytes.append(UInt8(ascii: "}"))
        }
        if let error = result.error {
            key("error")
            bytes.append(UInt8(ascii: "{"))
            key("code")
            string(error.code)
            key("message")
            string(error.message)
            key("retryable")
            bool(error.retryable)
            bytes.append(UInt8(ascii: "}"))
        }
        key("jobId")
        string(result.jobID)
        if let jobKey = result.key {
            key("key")
            string(jobKey)
        }
        if let output = result.output {
            key("output")
            try value(output)
        }
        key("redelivered")
        bool(result.redelivered)
        key("sequence")
        integer(result.sequence)
        key("status")
        string(result.status.rawValue)
        key("timings")
        try timings(result.timings)
        if let type = result.type {
            key("type")
            string(type)
        }
        key("version")
        integer(result.version)
        key("workerId")
        string(result.workerID)
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func timings(_ timings: JobTimings) throws {
        bytes.append(UInt8(ascii: "{"))
        try date("enqueuedAt", timings.enqueuedAt)
        try date("finishedAt", timings.finishedAt)
        try date("receivedAt", timings.receivedAt)
        try date("startedAt", timings.startedAt)
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func date(_ name: String, _ date: Date?) throws {
        guard let date else { return }
        key(name)
        guard ISO8601Date.append(date, to: &bytes) else { throw Decline() }
    }

    /// A JSON value as ``JSONValue/encode(to:)`` and `JSONEncoder` write it.
    private mutating func value(_ value: JSONValue) throws {
        switch value {
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .bool(let flag):
            bool(flag)
        case .number(let number):
            try self.number(number)
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
            bytes.append(UInt8(ascii: "{"))
            for (name, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                key(name)
                try self.value(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func number(_ number: Double) throws {
        if number.rounded() == number, let integer = Int64(exactly: number) {
            self.integer(integer)
            return
        }
        guard number.isFinite else { throw Decline() }
        // JSONEncoder prints a Double as its description without a trailing ".0" (1e+20, 0.1, 5e-324).
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A member's name and colon, after a comma unless it is the object's first.
    private mutating func key(_ name: String) {
        if bytes.last != UInt8(ascii: "{") { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func bool(_ flag: Bool) {
        bytes.append(contentsOf: flag ? "true".utf8 : "false".utf8)
    }

    private mutating func integer(_ value: some BinaryInteger) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var rest = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Runs of bytes that need no escape go in whole.
            var plainStart = 0
            for (index, byte) in utf8.enumerated()
            where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: utf8[plainStart..<index])
                escape(byte)
                plainStart = index + 1
            }
            bytes.append(contentsOf: utf8[plainStart...])
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
