import ArgumentParser
import Logging
import Synchronization
import Warren

/// How log lines look on standard error.
enum LogFormat: String, CaseIterable, Sendable, ExpressibleByArgument {
    /// swift-log's text lines: `TIMESTAMP LEVEL LABEL : METADATA [SOURCE] MESSAGE` (``TextLogHandler``).
    case text
    /// One JSON object per line (``JSONLogHandler``).
    case json

    /// Runs `body`; in ``json``, a ``WarrenError`` it throws goes through `logger`, so that the log stays JSON to
    /// its last line, rather than ending with a plain "Error:" line.
    func reportingFailures<T>(to logger: Logger, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as WarrenError where self == .json {
            logger.critical("\(error.message)", metadata: ["error": "\(error.code)"])
            throw ExitCode.failure
        }
    }
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
