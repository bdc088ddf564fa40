import Foundation
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Shows a job's progress on standard error: a bar redrawn in place on a terminal, plain lines otherwise.
///
/// Thread safety: confined to the thread that waits for the result.
final class ProgressDisplay {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var drewBar = false

    func show(_ report: ProgressMessage) {
        let percent = Int((report.fraction * 100).rounded())
        if isTerminal {
            let filled = Int(report.fraction * 30)
            let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: 30 - filled)
            // The message is the job's text (or a forger's, in the reply queue): escaped, so that it cannot set the
            // terminal's title or clear it.
            write("\r\u{1B}[2K[\(bar)] \(percent)% \(ResultPrinter.printable(report.message ?? ""))")
            drewBar = true
        } else {
            write(ResultPrinter.line(report) + "\n")
        }
    }

    /// Ends the bar's line, so the result prints below it; a later report draws a new bar.
    func finish() {
        if drewBar { write("\n") }
        drewBar = false
    }

    private func write(_ text: String) {
        StandardErrorLines.write(text)
    }
}
