import ArgumentParser
import Logging
import Synchronization

/// Sets up swift-log once per process: text lines on standard error at the requested level.
enum LogSetup {
    private static let done = Mutex(false)

    static func bootstrap(level: Logger.Level) {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
