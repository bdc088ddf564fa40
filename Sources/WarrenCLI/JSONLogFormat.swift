import Foundation
import Logging

/// JSON log lines, one object per line (`--log-format json`, ``JSONLogHandler``):
///
/// ```
/// {"timestamp":"2026-11-22T10:00:00.123Z","level":"info","label":"warren.worker","message":"worker started","worker":"host-42","prefetch":"4"}
/// ```
///
/// `timestamp` (UTC, milliseconds), `level`, `label` and `message` come first; the metadata follows at the top level,
/// nested dictionaries flattened into dotted keys (`a.b`), lists written as arrays of strings, every other value as
/// its string. A metadata key that collides with one of the four fixed fields is written as `metadata.KEY`.
///
/// Thread safety: stateless.
enum JSONLogFormat: LogLineFormat {
    private static let fixedKeys: Set<String> = ["timestamp", "level", "label", "message"]
    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func line(label: String, event: LogEvent, metadata: Logger.Metadata) -> String {
        var line = "{"
        append("timestamp", .string(Date().formatted(timestampStyle)), to: &line)
        line += ","
        append("level", .string(event.level.rawValue), to: &line)
        line += ","
        append("label", .string(label), to: &line)
        line += ","
        append("message", .string("\(event.message)"), to: &line)
        var fields: [(String, Logger.Metadata.Value)] = []
        flatten(metadata, prefix: "", into: &fields)
        for (key, value) in fields.sorted(by: { $0.0 < $1.0 }) {
            line += ","
            append(fixedKeys.contains(key) ? "metadata.\(key)" : key, value, to: &line)
        }
        return line + "}\n"
    }

    private static func flatten(
        _ metadata: Logger.Metadata, prefix: String, into fields: inout [(String, Logger.Metadata.Value)]
    ) {
        for (key, value) in metadata {
            if case .dictionary(let nested) = value, !nested.isEmpty {
                flatten(nested, prefix: "\(prefix)\(key).", into: &fields)
            } else {
                fields.append(("\(prefix)\(key)", value))
            }
        }
    }

    private static func append(_ key: String, _ value: Logger.Metadata.Value, to line: inout String) {
        appendString(key, to: &line)
        line += ":"
        switch value {
        case .string(let string):
            appendString(string, to: &line)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, element) in values.enumerated() {
                if index > 0 { line += "," }
                appendString(element.description, to: &line)
            }
            line += "]"
        case .dictionary(let nested):
            // Only an empty dictionary gets here; fuller ones are flattened.
            appendString(Logger.Metadata.Value.dictionary(nested).description, to: &line)
        }
    }

    /// Appends `string` as a JSON string literal: quotes, backslashes and control characters escaped.
    private static func appendString(_ string: String, to line: inout String) {
        line += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || (0x2028...0x2029).contains(scalar.value):
                line += String(format: "\\u%04x", scalar.value)
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}
