import Foundation
import Warren

/// How the CLI prints results and descriptors.
enum ResultPrinter {
    static func line(_ result: JobResult, verdict: StaleResultFilter.Verdict) -> String {
        var fields = [result.status.rawValue, printable(result.jobID)]
        switch verdict {
        case .current: break
        case .stale(let newer):
            fields[0] = "stale"
            fields.append("(newer seq=\(newer) already seen; was \(result.status.rawValue))")
        case .duplicate: fields[0] = "duplicate"
        }
        if let type = result.type { fields.append("type=\(printable(type))") }
        fields.append("seq=\(result.sequence)")
        if let key = result.key { fields.append("key=\(printable(key))") }
        fields.append("worker=\(printable(result.workerID))")
        fields.append("attempt=\(result.attempt)")
        if let requeuedAt = result.requeuedAt { fields.append("requeued=\(WireCoding.text(of: requeuedAt))") }
        if let output = result.output,
            let text = try? String(decoding: JSONEncoder.sorted.encode(output), as: UTF8.self)
        {
            fields.append("output=\(jsonEscapingControls(text))")
        }
        if let error = result.error { fields.append("error=\(printable(error.code)): \(printable(error.message))") }
        if let cancellation = result.cancellation {
            fields.append("reason=\(printable(cancellation.reason)): \(printable(cancellation.message))")
        }
        return fields.joined(separator: " ")
    }

    static func line(_ report: ProgressMessage) -> String {
        "progress \(printable(report.jobID)) \(percent(report.fraction)) worker=\(printable(report.workerID))"
            + (report.message.map { " \(printable($0))" } ?? "")
    }

    /// Whether `text` holds what ``printable(_:)`` escapes: a control character (Unicode's Cc: U+0000–U+001F,
    /// U+007F–U+009F) or a backslash, found in its UTF-8 bytes: every log line's metadata is checked, and a scalar's
    /// properties cost far more to look up.
    static func needsEscaping(_ text: String) -> Bool {
        var afterC2 = false
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "\\") || (afterC2 && (0x80...0x9F).contains(byte)) {
                return true
            }
            afterC2 = byte == 0xC2
        }
        return false
    }

    /// Text a job, its code or another client chose (an id, a type, a key, a message), with control characters
    /// escaped (`\n`, `\u{1B}`), so that it cannot end a line and forge the next one, nor move a terminal's cursor;
    /// a backslash is escaped too (`\\`), so that a real newline and the two characters `\n` print apart.
    static func printable(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.properties.generalCategory == .control:
                escaped += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// JSON text with the control characters JSONEncoder leaves as they are (DEL and C1, U+007F–U+009F) written as
    /// JSON escapes (`\u007f`): the same JSON, which can no longer move a terminal's cursor. Outside strings JSON holds
    /// none, so every one replaced is inside a string.
    static func jsonEscapingControls(_ json: String) -> String {
        guard needsEscaping(json) else { return json }
        var escaped = ""
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) {
                escaped += "\\u00" + String(scalar.value, radix: 16)
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// A progress fraction as a whole percentage: `42%`.
    static func percent(_ fraction: Double) -> String {
        // Clamped: a status reply's progress is another process's word (1e300 would trap converting to Int).
        guard fraction.isFinite else { return "?%" }
        return "\(Int((min(max(fraction, 0), 1) * 100).rounded()))%"
    }

    static func json(_ result: JobResult, verdict: StaleResultFilter.Verdict, offset: UInt64? = nil) throws -> String {
        let name: String
        switch verdict {
        case .current: name = "current"
        case .stale: name = "stale"
        case .duplicate: name = "duplicate"
        }
        let body = try String(decoding: JSONEncoder.sorted.encode(result), as: UTF8.self)
        let position = offset.map { ",\"offset\":\($0)" } ?? ""
        return "{\"verdict\":\"\(name)\"\(position),\"result\":\(body)}"
    }

    static func json(_ value: some Encodable) throws -> String {
        try String(decoding: JSONEncoder.sorted.encode(value), as: UTF8.self)
    }
}

extension JSONEncoder {
    /// Sorted keys and dates as the wire format writes them, rounded to the millisecond
    /// (`2026-11-24T09:00:00.250Z`): what the CLI prints of a descriptor is what it published.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(WireCoding.text(of: date))
        }
        return encoder
    }
}
