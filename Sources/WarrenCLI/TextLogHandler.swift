import Logging

/// swift-log's text lines (`--log-format text`, `TIMESTAMP LEVEL LABEL : METADATA [SOURCE] MESSAGE`), with control
/// characters in the message and the metadata escaped (`\n`, `\u{1B}`, as ``ResultPrinter/printable(_:)``): a job
/// type, key or error message a producer made up cannot end its line and forge the next one, nor move a
/// terminal's cursor. (`--log-format json` escapes them as JSON does.)
///
/// Thread safety: a value type; the `StreamLogHandler` it wraps writes each line under its stream's lock.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler

    /// A handler that writes to standard error.
    static func standardError(label: String) -> TextLogHandler {
        TextLogHandler(stream: .standardError(label: label))
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    /// Kept here as given, and escaped only when a line is logged: a worker sets a job's metadata for every job,
    /// and logs few of them.
    var metadata: Logger.Metadata = [:]

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(ResultPrinter.printable("\(event.message)"))"
        var merged = metadata
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        event.metadata = merged.mapValues(Self.printable)
        stream.log(event: event)
    }

    /// `value` with control characters escaped in every string it holds; values that are not strings become their
    /// descriptions, escaped.
    private static func printable(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let string): .string(ResultPrinter.printable(string))
        case .stringConvertible(let convertible): .string(ResultPrinter.printable(convertible.description))
        case .array(let values): .array(values.map(printable))
        case .dictionary(let nested): .dictionary(nested.mapValues(printable))
        }
    }
}
