import Logging

/// How a ``LineLogHandler`` writes a log event: one line, its newline included.
protocol LogLineFormat {
    static func line(label: String, event: LogEvent, metadata: Logger.Metadata) -> String
}

/// A swift-log handler that writes each event as one line in `Format`, with the handler's metadata, the metadata
/// provider's and the event's merged (the event's last).
///
/// It writes what it is given: callers log URLs through `AMQPConfiguration.redact` or `redactedURL`, as the worker
/// does, so that no password reaches a log.
///
/// Thread safety: a value type; the output function is `@Sendable` (``StandardErrorLines`` for standard error).
struct LineLogHandler<Format: LogLineFormat>: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    /// Kept here as given, and escaped only when a line is logged: a worker sets a job's metadata for every job,
    /// and logs few of them.
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    private let write: @Sendable (String) -> Void

    /// A handler that passes each line, newline included, to `write`.
    init(label: String, metadataProvider: Logger.MetadataProvider? = nil, write: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.write = write
    }

    /// A handler that writes to standard error.
    static func standardError(label: String) -> Self {
        Self(label: label, metadataProvider: LoggingSystem.metadataProvider, write: StandardErrorLines.write)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        write(Format.line(label: label, event: event, metadata: merged))
    }
}

/// Text lines (`--log-format text`).
typealias TextLogHandler = LineLogHandler<TextLogFormat>

/// JSON lines (`--log-format json`).
typealias JSONLogHandler = LineLogHandler<JSONLogFormat>
