import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Text log lines (`--log-format text`, ``TextLogHandler``): `TIMESTAMP LEVEL LABEL: KEY=VALUE… [SOURCE] MESSAGE`,
/// as swift-log's `StreamLogHandler` writes them, but with
/// - the time to the millisecond, read from the real-time clock (`time()` reads a coarse clock that may still show
///   the second before, so that a job enqueued at 10:00:00.001 would seem logged at 09:59:59);
/// - control characters in the message and the metadata escaped (`\n`, `\u{1B}`, and a backslash as `\\`, as
///   ``ResultPrinter/printable(_:)``): a job type, key or error message a producer made up cannot end its line and
///   forge the next one, nor move a terminal's cursor, nor pass for a control character;
/// - a metadata value that is empty or holds a space, `"` or `=` in double quotes (logfmt): one cannot forge a field
///   (`type="x job=FAKE"`).
///
/// (`--log-format json` escapes as JSON does.)
///
/// Thread safety: stateless.
enum TextLogFormat: LogLineFormat {
    static func line(label: String, event: LogEvent, metadata: Logger.Metadata) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\(field($0.value))" }
        return "\(timestamp()) \(event.level) \(label):\(fields.isEmpty ? "" : " " + fields.joined(separator: " ")) "
            + "[\(event.source)] \(ResultPrinter.printable("\(event.message)"))\n"
    }

    /// A metadata value as a field's text: control characters escaped, in quotes if it needs them; a list as
    /// `[a,"b c"]`, each element so.
    static func field(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): quoted(ResultPrinter.printable(string))
        case .array(let values):
            "[" + values.map { quoted(ResultPrinter.printable($0.description)) }.joined(separator: ",") + "]"
        default: quoted(ResultPrinter.printable(value.description))
        }
    }

    /// Printable `text` (its backslashes escaped already) in double quotes, `"` escaped, if it is empty or holds a
    /// space, `"`, `=`, `,`, `[` or `]`.
    private static func quoted(_ text: String) -> String {
        guard text.isEmpty || text.contains(where: { " \"=,[]".contains($0) }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The local time to the millisecond, with its offset: `2026-11-25T01:34:59.001+0000`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var local = tm()
        localtime_r(&seconds, &local)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, 32, "%Y-%m-%dT%H:%M:%S", &local)
        let milliseconds = Int(now.tv_nsec / 1_000_000)
        let zoneLength = strftime(&buffer[length], 16, "%z", &local)
        let dateTime = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let zone = String(decoding: buffer[length..<(length + zoneLength)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return dateTime + "." + String(repeating: "0", count: milliseconds < 10 ? 2 : milliseconds < 100 ? 1 : 0)
            + String(milliseconds) + zone
    }
}
