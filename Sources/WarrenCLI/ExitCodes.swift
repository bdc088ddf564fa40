import ArgumentParser

extension ExitCode {
    /// The awaited job ended `failed`.
    static let jobFailed = ExitCode(3)
    /// The awaited job ended `cancelled`.
    static let jobCancelled = ExitCode(4)
    /// No result arrived within `--timeout`.
    static let timedOut = ExitCode(5)
    /// A unique job was not enqueued: another job of its key holds the key's lock.
    static let duplicate = ExitCode(6)
}
