import ArgumentParser
import Logging
import Synchronization

/// How log lines look on standard error.
enum LogFormat: String, CaseIterable, Sendable, ExpressibleByArgument {
    /// swift-log's text lines: `TIMESTAMP LEVEL LABEL : METADATA [SOURCE] MESSAGE` (``TextLogHandler``).
    case text
    /// One JSON object per line (``JSONLogHandler``).
    case json
}

/// Sets up swift-log once per process: lines on standard error, as text or JSON, at the requested level.
enum LogSetup {
    private static let done = Mutex(false)

    static func bootstrap(level: Logger.Level, format: LogFormat = .text) {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        LoggingSystem.bootstrap { label -> any LogHandler in
            switch format {
            case .text:
                var handler = TextLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
