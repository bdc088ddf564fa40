import AMQP
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes lines to standard error (logs, and the command line's messages), whole: lines from different threads
/// never interleave. A line that cannot be written (a full disk, a closed pipe) is dropped: unlike
/// `FileHandle.standardError.write`, which traps, it never ends the process.
///
/// Thread safety: locked.
package enum StandardErrorLines {
    private static let lock = Mutex(())

    /// Writes `line` (its newline included) with as many `write` calls as it takes, under the lock.
    package static func write(_ line: String) {
        let bytes = Array(line.utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = SystemCall.write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }
}
