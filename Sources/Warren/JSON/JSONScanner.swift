/// Reads JSON values straight from UTF-8 bytes, for the fast paths of ``DescriptorReader`` and ``JobResultReader``.
///
/// It accepts only what Foundation's `JSONDecoder` (with ``WireCoding/decoder``) reads to the very same value, and
/// throws ``Decline`` for everything else: invalid JSON, invalid UTF-8, a lone surrogate escape, a number that is
/// not exact or that Foundation refuses (out of range, or zero written with an exponent or non-zero digits), a key
/// given twice in an object. A declined message goes to the Codable path, which says precisely what is wrong.
///
/// Thread safety: a value type used by one thread, inside the `withUnsafeBufferPointer` scope of its bytes.
struct JSONScanner {
    /// Thrown for anything the fast path does not read exactly as `JSONDecoder` does.
    struct Decline: Error {}

    // Valid only inside the `withUnsafeBufferPointer` closure that made this scanner, which it never leaves.
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    /// Arrays and objects deeper than this are declined; the top-level value is level 1.
    let maxDepth: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// The byte at the current position, or 0 at the end. A NUL byte is never valid where the scanner looks
    /// (JSON has none outside strings, and inside them it must be escaped), so 0 serves as the end marker.
    private var byte: UInt8 {
        position < bytes.count ? bytes[position] : 0
    }

    var isAtEnd: Bool { position == bytes.count }

    mutating func skipWhitespace() {
        while byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
            || byte == UInt8(ascii: "\t")
        {
            position += 1
        }
    }

    /// Consumes `expected` after optional whitespace, or returns `false` and consumes only the whitespace.
    mutating func consume(_ expected: Unicode.Scalar) -> Bool {
        skipWhitespace()
        guard byte == UInt8(ascii: expected) else { return false }
        position += 1
        return true
    }

    mutating func expect(_ expected: Unicode.Scalar) throws {
        guard consume(expected) else { throw Decline() }
    }

    /// Whether a string comes next, after whitespace.
    mutating func isAtString() -> Bool {
        skipWhitespace()
        return byte == UInt8(ascii: "\"")
    }

    /// Skips the value here, after whitespace, finding only where it ends: brackets are counted and strings
    /// stepped over, nothing is read or checked. Stops before the `,`, `}` or `]` that follows it; `false` when the
    /// text ends first. For ``JSONText/firstString(_:inObject:)``, which reads past what the parser refuses.
    mutating func skipValue() -> Bool {
        skipWhitespace()
        var depth = 0
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                while position < bytes.count && bytes[position] != UInt8(ascii: "\"") {
                    position += bytes[position] == UInt8(ascii: "\\") ? 2 : 1
                }
                guard position < bytes.count else { return false }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return true }
                depth -= 1
                if depth == 0 {
                    position += 1
                    return true
                }
            case UInt8(ascii: ",") where depth == 0:
                return true
            default:
                break
            }
            position += 1
        }
        return false
    }

    /// Consumes `null` (after whitespace) if it comes next.
    mutating func consumeNull() -> Bool {
        skipWhitespace()
        return byte == UInt8(ascii: "n") && consumeLiteral("null")
    }

    private mutating func consumeLiteral(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count,
            UnsafeBufferPointer(rebasing: bytes[position..<position + count]).elementsEqual(
                UnsafeBufferPointer(start: literal.utf8Start, count: count))
        else { return false }
        position += count
        return true
    }

    // MARK: - Values

    /// Any JSON value, as ``JSONValue``'s `init(from:)` decodes it; `depth` is the level of its container.
    mutating func readValue(depth: Int) throws -> JSONValue {
        skipWhitespace()
        switch byte {
        case UInt8(ascii: "{"):
            return .object(try readObject(depth: depth + 1))
        case UInt8(ascii: "["):
            var array: [JSONValue] = []
            try readArray(depth: depth + 1) { array.append(try $0.readValue(depth: depth + 1)) }
            return .array(array)
        case UInt8(ascii: "\""):
            return .string(try readString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return .bool(try readBool())
        case UInt8(ascii: "n"):
            guard consumeLiteral("null") else { throw Decline() }
            return .null
        default:
            // As JSONValue's Decodable initialiser reads a number: exactly, as an integer, when a Double cannot hold it.
            let number = try scanNumber()
            if let integer = integer(number), Double(exactly: integer) == nil { return .integer(integer) }
            let value = try double(number)
            // JSONDecoder also reads an integer written with a fraction or an exponent (9.007199254740993e15)
            // exactly: past 2^53 such a one is left to it.
            if !number.isInteger, value.magnitude >= 0x1p53, value.magnitude <= 0x1p63, value.rounded() == value {
                throw Decline()
            }
            return .number(value)
        }
    }

    private mutating func readObject(depth: Int) throws -> [String: JSONValue] {
        guard depth <= maxDepth else { throw Decline() }
        try expect("{")
        var object: [String: JSONValue] = [:]
        if consume("}") { return object }
        repeat {
            let key = try readString()
            try expect(":")
            // Keys compare as Swift strings compare (canonically equivalent ones are equal), as in JSONDecoder's
            // dictionary; which of two equal keys it keeps is its business, so a repeated key is declined.
            guard object.updateValue(try readValue(depth: depth), forKey: key) == nil else { throw Decline() }
        } while consume(",")
        try expect("}")
        return object
    }

    /// Calls `element` for each element of an array, which must come next; `depth` is the array's level.
    mutating func readArray(depth: Int, _ element: (inout JSONScanner) throws -> Void) throws {
        guard depth <= maxDepth else { throw Decline() }
        try expect("[")
        if consume("]") { return }
        repeat {
            try element(&self)
        } while consume(",")
        try expect("]")
    }

    mutating func readBool() throws -> Bool {
        skipWhitespace()
        if consumeLiteral("true") { return true }
        if consumeLiteral("false") { return false }
        throw Decline()
    }

    // MARK: - Strings

    /// The bytes of the string here, consumed, when it is plain ASCII without escapes (a member name, most often);
    /// otherwise `nil`, with nothing consumed, for ``readString()`` to read.
    mutating func readPlainASCIIString() throws -> UnsafeBufferPointer<UInt8>? {
        guard isAtString() else { throw Decline() }
        var end = position + 1
        while end < bytes.count {
            switch bytes[end] {
            case UInt8(ascii: "\""):
                let text = UnsafeBufferPointer(rebasing: bytes[position + 1..<end])
                position = end + 1
                return text
            case UInt8(ascii: "\\"), 0..<0x20, 0x80...:
                return nil
            default:
                end += 1
            }
        }
        return nil
    }

    mutating func readString() throws -> String {
        try expect("\"")
        let start = position
        var isASCII = true
        while true {
            switch byte {
            case UInt8(ascii: "\""):
                let text = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                if isASCII { return String(decoding: text, as: UTF8.self) }
                guard let string = String(validating: text, as: UTF8.self) else { throw Decline() }
                return string
            case UInt8(ascii: "\\"):
                return try readEscapedString(from: start)
            case 0..<0x20:
                throw Decline()  // a control character, or the end of the bytes
            case 0x80...:
                isASCII = false
                position += 1
            default:
                position += 1
            }
        }
    }

    /// The rest of a string that has escapes: `start` is just after its opening quote.
    private mutating func readEscapedString(from start: Int) throws -> String {
        var utf8 = Array(bytes[start..<position])
        while true {
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let string = String(validating: utf8, as: UTF8.self) else { throw Decline() }
                return string
            case UInt8(ascii: "\\"):
                position += 1
                let escape = byte
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: UTF8.encode(try readUnicodeEscape())!)
                default: throw Decline()
                }
            case 0..<0x20:
                throw Decline()
            default:
                utf8.append(byte)
                position += 1
            }
        }
    }

    /// The scalar of a `\uXXXX` escape whose `\u` was read, joining a surrogate pair; a lone surrogate is declined.
    private mutating func readUnicodeEscape() throws -> Unicode.Scalar {
        let unit = try readHex4()
        switch unit {
        case 0xD800...0xDBFF:
            guard consumeLiteral("\\u") else { throw Decline() }
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw Decline() }
            return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
        case 0xDC00...0xDFFF:
            throw Decline()
        default:
            return Unicode.Scalar(unit)!
        }
    }

    private mutating func readHex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Decline()
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    // MARK: - Numbers

    /// Where a number's text is, checked against JSON's grammar, and what it is made of.
    private struct NumberText {
        var range: Range<Int>
        var isNegative: Bool
        /// Its digits before the exponent, without the decimal point (leading zeros included), when there are at
        /// most 19 of them; otherwise `nil`.
        var mantissa: UInt64?
        var mantissaIsZero: Bool
        /// How many digits follow the decimal point.
        var fractionDigits: Int
        /// The exponent, clamped to ±9999 (which is beyond any finite non-zero double).
        var exponent: Int
        var hasExponent: Bool
        var isInteger: Bool { fractionDigits == 0 && !hasExponent }
    }

    private mutating func scanNumber() throws -> NumberText {
        skipWhitespace()
        let start = position
        let isNegative = byte == UInt8(ascii: "-")
        if isNegative { position += 1 }
        var mantissa: UInt64 = 0
        var digitCount = 0
        var mantissaIsZero = true
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        // Leading zeros ("01") are not JSON.
        if byte == UInt8(ascii: "0") && isDigit(position + 1 < bytes.count ? bytes[position + 1] : 0) {
            throw Decline()
        }
        let integerStart = position
        while isDigit(byte) {
            mantissa = mantissa &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            mantissaIsZero = mantissaIsZero && byte == UInt8(ascii: "0")
            digitCount += 1
            position += 1
        }
        guard position > integerStart else { throw Decline() }
        var fractionDigits = 0
        if byte == UInt8(ascii: ".") {
            position += 1
            while isDigit(byte) {
                mantissa = mantissa &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                mantissaIsZero = mantissaIsZero && byte == UInt8(ascii: "0")
                digitCount += 1
                fractionDigits += 1
                position += 1
            }
            guard fractionDigits > 0 else { throw Decline() }
        }
        var exponent = 0
        let hasExponent = byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
        if hasExponent {
            position += 1
            let isNegativeExponent = byte == UInt8(ascii: "-")
            if isNegativeExponent || byte == UInt8(ascii: "+") { position += 1 }
            let exponentStart = position
            while isDigit(byte) {
                exponent = min(exponent * 10 + Int(byte - UInt8(ascii: "0")), 9999)
                position += 1
            }
            guard position > exponentStart else { throw Decline() }
            if isNegativeExponent { exponent = -exponent }
        }
        return NumberText(
            range: start..<position, isNegative: isNegative, mantissa: digitCount <= 19 ? mantissa : nil,
            mantissaIsZero: mantissaIsZero, fractionDigits: fractionDigits, exponent: exponent,
            hasExponent: hasExponent)
    }

    /// A number decoded as `JSONDecoder` decodes a `Double`.
    mutating func readDouble() throws -> Double {
        try double(scanNumber())
    }

    private func double(_ number: NumberText) throws -> Double {
        // JSONDecoder refuses a number that comes out as zero unless it is written as one: no exponent, no
        // non-zero digit ("0e5" and "1e-400" are refused, "-0.0" is -0.0).
        if number.mantissaIsZero && !number.hasExponent { return number.isNegative ? -0.0 : 0 }
        guard !number.mantissaIsZero else { throw Decline() }
        let value: Double
        let scale = number.exponent - number.fractionDigits
        if let mantissa = number.mantissa, mantissa < 1 << 53, abs(scale) < Self.powersOfTen.count {
            // Both operands are exact, so one correctly rounded operation gives the correctly rounded value.
            let magnitude =
                scale < 0 ? Double(mantissa) / Self.powersOfTen[-scale] : Double(mantissa) * Self.powersOfTen[scale]
            value = number.isNegative ? -magnitude : magnitude
        } else {
            // The standard library's parser rounds correctly too, as JSONDecoder's does.
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[number.range]), as: UTF8.self)
            guard let parsed = Double(text) else { throw Decline() }
            value = parsed
        }
        guard value.isFinite, value != 0 else { throw Decline() }
        return value
    }

    /// 10^0 … 10^22: every one of them is exact as a `Double`.
    private static let powersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { power, _ in power * 10 }
    }

    /// An integer written without a fraction or exponent and without `-0`, as `JSONDecoder` decodes it to `Int`.
    mutating func readInt() throws -> Int {
        guard let value = integer(try scanNumber()) else { throw Decline() }
        return Int(value)
    }

    /// The value of `number` if it is an integer as `JSONDecoder` decodes one to `Int64`; `nil` for other numbers,
    /// and for `-0` and `Int64.min`, which the callers leave to `JSONDecoder` or read as a `Double`.
    private func integer(_ number: NumberText) -> Int64? {
        guard number.isInteger, let mantissa = number.mantissa, let magnitude = Int64(exactly: mantissa),
            !(number.isNegative && magnitude == 0)
        else { return nil }
        return number.isNegative ? -magnitude : magnitude
    }

    /// A non-negative integer written without a fraction or exponent, as `JSONDecoder` decodes it to `UInt64`.
    mutating func readUInt64() throws -> UInt64 {
        let number = try scanNumber()
        // A 20-digit number may have overflowed the mantissa: only 19 digits are sure to fit.
        guard number.isInteger, !number.isNegative, number.range.count <= 20 else { throw Decline() }
        if let mantissa = number.mantissa { return mantissa }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[number.range]), as: UTF8.self)
        guard let value = UInt64(text) else { throw Decline() }
        return value
    }
}
