/// JSON text as a worker receives it: UTF-8, or UTF-16 or UTF-32 (either byte order, with or without a byte order
/// mark), told apart as Foundation's `JSONSerialization` does. The checks that read bytes (the nesting depth, the
/// id of an unreadable descriptor) read its UTF-8 form, so that they see the same text the parser does.
package enum JSONText {
    fileprivate enum Encoding {
        case utf8
        case utf16(bigEndian: Bool)
        case utf32(bigEndian: Bool)
    }

    /// `body` as UTF-8 text: itself when it is UTF-8 (a byte order mark dropped), else transcoded.
    /// - Throws: ``JobError`` (`malformedMessage`) when it is not valid in the encoding its first bytes announce.
    static func utf8(_ body: [UInt8]) throws -> [UInt8] {
        let (encoding, markLength) = detect(body)
        let payload = body[markLength...]
        var utf8: [UInt8] = []
        let failed: Bool
        switch encoding {
        case .utf8:
            return markLength == 0 ? body : Array(payload)
        case .utf16(let bigEndian):
            guard payload.count % 2 == 0 else { throw malformed(encoding.name, body) }
            let units = stride(from: payload.startIndex, to: payload.endIndex, by: 2).lazy.map { index in
                let (first, second) = (UInt16(payload[index]), UInt16(payload[index + 1]))
                return bigEndian ? first << 8 | second : second << 8 | first
            }
            utf8.reserveCapacity(payload.count)
            failed = transcode(units.makeIterator(), from: UTF16.self, to: UTF8.self, stoppingOnError: true) {
                utf8.append($0)
            }
        case .utf32(let bigEndian):
            guard payload.count % 4 == 0 else { throw malformed(encoding.name, body) }
            let units = stride(from: payload.startIndex, to: payload.endIndex, by: 4).lazy.map { index in
                (0..<4).reduce(UInt32(0)) { value, offset in
                    value << 8 | UInt32(payload[bigEndian ? index + offset : index + 3 - offset])
                }
            }
            utf8.reserveCapacity(payload.count)
            failed = transcode(units.makeIterator(), from: UTF32.self, to: UTF8.self, stoppingOnError: true) {
                utf8.append($0)
            }
        }
        if failed { throw malformed(encoding.name, body) }
        return utf8
    }

    /// Hands `read` the scanner at the value of the first member of each name in `names` of the top-level object of
    /// `text` (UTF-8); `read` takes the value if it is of a type it wants, and the rest is skipped. Nothing else is
    /// checked: the rest of the text may be invalid, nested without limit, or hold numbers no double can. Reading
    /// stops where the text stops being an object's members.
    static func firstMembers(
        _ names: Set<String>, inObject text: [UInt8], _ read: (String, inout JSONScanner) -> Void
    ) {
        text.withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes, maxDepth: 1)
            var seen: Set<String> = []
            guard scanner.consume("{") else { return }
            while scanner.isAtString(), seen.count < names.count {
                guard let name = try? scanner.readString(), scanner.consume(":") else { return }
                if names.contains(name), seen.insert(name).inserted { read(name, &scanner) }
                guard scanner.skipValue(), scanner.consume(",") else { return }
            }
        }
    }

    /// The byte offset of the first comma in `text` (UTF-8) that only whitespace separates from a closing `]` or
    /// `}`, outside strings; `nil` if there is none. JSON has no trailing commas, but Foundation's parsers accept
    /// them (swift-corelibs-foundation on Linux), and a client that speaks strict JSON would refuse the message.
    package static func trailingCommaOffset(in text: [UInt8]) -> Int? {
        var comma: Int?
        let closing = text.withUnsafeBytes { bytes in
            JSONNesting.firstOutsideStrings(in: bytes) { offset, byte in
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                    return false
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    return comma != nil
                default:
                    comma = byte == UInt8(ascii: ",") ? offset : nil
                    return false
                }
            }
        }
        return closing == nil ? nil : comma
    }

    /// The encoding `body` is in, and the length of its byte order mark (0 without one).
    private static func detect(_ body: [UInt8]) -> (Encoding, Int) {
        let head = Array(body.prefix(4)) + Array(repeating: 0xAA, count: max(0, 4 - body.count))
        switch (head[0], head[1], head[2], head[3]) {
        case (0x00, 0x00, 0xFE, 0xFF): return (.utf32(bigEndian: true), 4)
        case (0xFF, 0xFE, 0x00, 0x00): return (.utf32(bigEndian: false), 4)
        case (0xFE, 0xFF, _, _): return (.utf16(bigEndian: true), 2)
        case (0xFF, 0xFE, _, _): return (.utf16(bigEndian: false), 2)
        case (0xEF, 0xBB, 0xBF, _): return (.utf8, 3)
        case (0x00, 0x00, 0x00, _): return (.utf32(bigEndian: true), 0)
        case (_, 0x00, 0x00, 0x00): return (.utf32(bigEndian: false), 0)
        case (0x00, _, _, _): return (.utf16(bigEndian: true), 0)
        case (_, 0x00, _, _): return (.utf16(bigEndian: false), 0)
        default: return (.utf8, 0)
        }
    }

    private static func malformed(_ encoding: String, _ body: [UInt8]) -> JobError {
        JobError(code: "malformedMessage", message: "message body is not valid \(encoding) (\(body.count) bytes)")
    }
}

extension JSONText.Encoding {
    fileprivate var name: String {
        switch self {
        case .utf8: "UTF-8"
        case .utf16(let bigEndian): bigEndian ? "UTF-16BE" : "UTF-16LE"
        case .utf32(let bigEndian): bigEndian ? "UTF-32BE" : "UTF-32LE"
        }
    }
}
