/// A single pass over JSON text that finds how deeply its arrays and objects nest, without parsing it.
///
/// Foundation's JSON parsers recurse once per level (and give up, unhelpfully, past 512); the typed decoding that
/// follows recurses again through ``JSONValue``. Checking the depth first bounds both, and says what is wrong.
package enum JSONNesting {
    /// Where the nesting first goes deeper than `limit`: the 0-based byte offset of the `[` or `{` that opens
    /// level `limit + 1`; `nil` if it never does. Brackets inside strings do not count. Invalid JSON is scanned
    /// all the same (the parser rejects it afterwards), and unbalanced closing brackets are ignored.
    package static func offsetBeyond(limit: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        var depth = 0
        return firstOutsideStrings(in: bytes) { _, byte in
            switch byte {
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                return depth > limit
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth = max(depth - 1, 0)
            default:
                break
            }
            return false
        }
    }

    /// The offset of the first byte of `bytes`, outside strings, for which `isIt` is true; `nil` if none is. The
    /// bytes inside a string (between its quotes, escapes included) are skipped; its opening quote is not.
    static func firstOutsideStrings(in bytes: UnsafeRawBufferPointer, where isIt: (Int, UInt8) -> Bool) -> Int? {
        var inString = false
        var escaped = false
        for (offset, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            if byte == UInt8(ascii: "\"") { inString = true }
            if isIt(offset, byte) { return offset }
        }
        return nil
    }

    /// ``offsetBeyond(limit:in:)`` for a byte array.
    static func offsetBeyond(limit: Int, in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { offsetBeyond(limit: limit, in: $0) }
    }
}
