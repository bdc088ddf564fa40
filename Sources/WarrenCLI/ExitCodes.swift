import ArgumentParser

extension ExitCode {
    /// The awaited job ended `failed`.
    static let jobFailed = ExitCode(3)
    /// The awaited job ended `cancelled`.
    static let jobCancelled = ExitCode(4)
    /// No result arrived within `--timeout`.
    static let timedOut = ExitCode(5)
}
