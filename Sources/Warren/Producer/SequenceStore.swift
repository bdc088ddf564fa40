import Foundation
import Glibc

/// Hands out sequence numbers that strictly increase across every producer process on a host.
///
/// The next number is `max(last + 1, microseconds since 1970)`, where `last` is kept in a file under an exclusive
/// `flock`: numbers never repeat or go backwards on one host, even across restarts, and numbers from hosts with
/// synchronised clocks interleave in time order.
///
/// Thread safety: immutable; the file lock serialises concurrent callers, threads and processes alike.
public struct SequenceStore: Sendable {
    /// The file holding the last number handed out.
    public let path: String

    /// The default file: `$WARREN_STATE_DIR/sequence`, else `$XDG_STATE_HOME/warren/sequence`,
    /// else `~/.local/state/warren/sequence`.
    public static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        if let directory = environment["WARREN_STATE_DIR"] { return directory + "/sequence" }
        let state = environment["XDG_STATE_HOME"] ?? (NSHomeDirectory() + "/.local/state")
        return state + "/warren/sequence"
    }

    public init(path: String = SequenceStore.defaultPath) {
        self.path = path
    }

    /// Reserves the next number.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) when the file cannot be created, locked or written.
    public func next() throws -> UInt64 {
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        } catch {
            throw WarrenError(
                .invalidConfiguration,
                "cannot create the directory of the sequence file '\(path)' (set WARREN_STATE_DIR)")
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("open") }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw failure("lock") }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        let last = count > 0 ? UInt64(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 : 0
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let next = max(last + 1, now)
        let text = Array("\(next)\n".utf8)
        guard ftruncate(descriptor, 0) == 0, pwrite(descriptor, text, text.count, 0) == text.count else {
            throw failure("write")
        }
        return next
    }

    private func failure(_ action: String) -> WarrenError {
        WarrenError(
            .invalidConfiguration,
            "cannot \(action) the sequence file '\(path)': \(String(cString: strerror(errno))) (set WARREN_STATE_DIR)")
    }
}
