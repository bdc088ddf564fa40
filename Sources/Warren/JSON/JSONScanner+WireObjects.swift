import Foundation

/// The member names of a wire object that a hand-written reader knows; a name's index here is its bit in the set
/// of members seen (at most 64).
///
/// Thread safety: immutable.
struct WireFieldNames: Sendable {
    private let names: [String]
    private let bytes: [[UInt8]]

    init(_ names: [String]) {
        precondition(names.count <= 64, "at most 64 members")
        self.names = names
        bytes = names.map { Array($0.utf8) }
    }

    /// The index of the member whose name is these very bytes. Every known name is plain ASCII, and no other
    /// spelling of one is equal as a Swift string: `nil` means an unknown member.
    func index(ofPlain name: UnsafeBufferPointer<UInt8>) -> Int? {
        bytes.firstIndex { known in
            known.count == name.count
                && known.withUnsafeBufferPointer { memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 }
        }
    }

    /// The index of the member called `name`, matched as `JSONDecoder` matches keys: by Swift string equality,
    /// which holds for equal bytes (the cheap test) and for canonically equivalent ones too.
    func index(of name: String) -> Int? {
        var name = name
        return name.withUTF8(index(ofPlain:)) ?? names.firstIndex(of: name)
    }
}

extension JSONScanner {
    /// Reads the object that comes next, at nesting level `level`: calls `member` with the index in `fields` of
    /// each known member, to read its value; skips the value of an unknown one, once read as JSON. A known member
    /// given twice is declined: which one `JSONDecoder` keeps is its business.
    mutating func readMembers(
        ofObjectAt level: Int, _ fields: WireFieldNames, _ member: (inout JSONScanner, Int) throws -> Void
    ) throws {
        guard level <= maxDepth else { throw Decline() }
        try expect("{")
        if consume("}") { return }
        var seen: UInt64 = 0
        repeat {
            let plainName = try readPlainASCIIString()
            let index = try plainName.map(fields.index(ofPlain:)) ?? fields.index(of: readString())
            try expect(":")
            guard let index else {
                _ = try readValue(depth: level)
                continue
            }
            let bit: UInt64 = 1 << index
            guard seen & bit == 0 else { throw Decline() }
            seen |= bit
            try member(&self, index)
        } while consume(",")
        try expect("}")
    }

    /// A date as ``WireCoding/decoder`` reads it: Unix seconds, or an ISO 8601 string, in the wire format's years.
    mutating func readDate() throws -> Date {
        let date: Date
        if isAtString() {
            // Plain ASCII, as Warren writes dates, is parsed where it lies; an escaped one is unescaped first.
            let parsed: Date?
            if let plain = try readPlainASCIIString() {
                parsed = ISO8601Date.date(parsing: plain)
            } else {
                var text = try readString()
                parsed = text.withUTF8 { ISO8601Date.date(parsing: $0) }
            }
            guard let parsed else { throw Decline() }
            date = parsed
        } else {
            date = Date(timeIntervalSince1970: try readDouble())
        }
        guard WireCoding.dateRange.contains(date.timeIntervalSince1970) else { throw Decline() }
        return date
    }

    /// The value here unless it is `null`, which reads as absent (the Codable paths decode optional members with
    /// `decodeIfPresent`).
    mutating func readUnlessNull<Value>(_ read: (inout JSONScanner) throws -> Value) throws -> Value? {
        consumeNull() ? nil : try read(&self)
    }
}
