#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file descriptor other threads write to wake a thread blocked in ``AMQPConnection/waitForActivity(wakeUp:timeout:)``.
///
/// Thread safety: immutable; writes to and reads from a non-blocking pipe are atomic system calls.
public final class WakeUpSignal: Sendable {
    /// The read end, watched by `poll`.
    let descriptor: Int32
    private let writeDescriptor: Int32

    public init() {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0, "pipe failed: \(errno)")
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        descriptor = ends[0]
        writeDescriptor = ends[1]
    }

    deinit {
        SystemCall.close(descriptor)
        SystemCall.close(writeDescriptor)
    }

    /// Wakes the waiting thread (or makes its next wait return at once).
    public func signal() {
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)
    }

    /// Blocks until the signal is raised or `timeout` passes, then clears it.
    public func wait(timeout: Duration) {
        let parts = timeout.components
        let milliseconds = Int32(clamping: parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, max(milliseconds, 0)) > 0 { reset() }
    }

    func reset() {
        var buffer = [UInt8](repeating: 0, count: 64)
        // A short read emptied the pipe: no second call just to learn that.
        while read(descriptor, &buffer, buffer.count) == buffer.count {}
    }
}
