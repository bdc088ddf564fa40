import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Hands out sequence numbers that strictly increase across every producer process on a host.
///
/// A reservation of `count` numbers takes `first = max(last + 1, microseconds since 1970)` and the numbers
/// `first ... first + count - 1`, where `last` is kept in a file under an exclusive `flock`: numbers never repeat
/// or go backwards on one host, even across restarts, and numbers from hosts with synchronised clocks interleave in
/// time order. A producer reserves the numbers of one `enqueue` call at once: one lock, one read and one write
/// per call, not per job, through the file it keeps open.
///
/// The file holds the last number handed out as decimal text, right-aligned in a fixed-width record
/// (`recordWidth` bytes, newline included) that each reservation overwrites in place: no truncation, which would
/// make ext4 flush the file on close. Older Warren versions wrote the number unpadded (`"1795313882672853\n"`);
/// both forms read the same, to this type and to those versions, which trim whitespace.
///
/// Thread safety: immutable; the file lock serialises concurrent callers, threads and processes alike.
public struct SequenceStore: Sendable {
    /// The file holding the last number handed out.
    public let path: String

    /// The size of the record: 20 digits (enough for any `UInt64`) and a newline.
    static let recordWidth = 21

    /// The default file: `$WARREN_STATE_DIR/sequence`, else `$XDG_STATE_HOME/warren/sequence`,
    /// else `~/.local/state/warren/sequence`.
    public static var defaultPath: String {
        StateDirectory.path + "/sequence"
    }

    public init(path: String = SequenceStore.defaultPath) {
        self.path = path
    }

    /// Reserves the next number.
    /// - Throws: ``WarrenError`` (`system`) when the file cannot be created, locked, read or written.
    public func next() throws -> UInt64 {
        try reserve(1).lowerBound
    }

    /// Reserves `count` consecutive numbers under one lock: no other caller on this host, in this process or
    /// another, gets any of them or any number below them from now on.
    /// - Parameter count: How many numbers; at least 1.
    /// - Returns: `first ... first + count - 1`, with `first = max(last + 1, microseconds since 1970)`.
    /// - Throws: ``WarrenError`` (`system`) when the file cannot be created, locked, read or written;
    ///   (`invalidConfiguration`) when it holds a number so large that `count` more would not fit in 64 bits.
    public func reserve(_ count: Int) throws -> ClosedRange<UInt64> {
        let descriptor = try openFile()
        defer { close(descriptor) }
        return try reserve(count, in: descriptor)
    }

    /// ``reserve(_:)`` through `descriptor`, an open description of the file: under its exclusive lock, released
    /// before returning.
    func reserve(_ count: Int, in descriptor: Int32) throws -> ClosedRange<UInt64> {
        precondition(count > 0, "reserve at least one sequence number")
        guard flock(descriptor, LOCK_EX) == 0 else { throw failure("lock") }
        defer { flock(descriptor, LOCK_UN) }
        // Two records' worth: a longer file is not one this type or an older Warren wrote, and reads as absent.
        let (last, length) = try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 * Self.recordWidth) {
            buffer in
            let length = pread(descriptor, buffer.baseAddress, buffer.count, 0)
            guard length >= 0 else { throw failure("read") }
            return (Self.number(in: UnsafeBufferPointer(rebasing: buffer[..<length])) ?? 0, length)
        }
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        let now = UInt64(clock.tv_sec) * 1_000_000 + UInt64(clock.tv_nsec / 1_000)
        guard let numbers = Self.numbers(after: last, now: now, count: count) else {
            throw WarrenError(
                .invalidConfiguration,
                "the sequence file '\(path)' holds \(last): no \(count) numbers left above it"
                    + StateDirectory.hint(for: path))
        }
        let record = Self.record(numbers.upperBound)
        guard pwrite(descriptor, record, record.count, 0) == record.count else { throw failure("write") }
        // Only a file that was not a record (longer than one) needs cutting; records overwrite records exactly.
        if length > record.count, ftruncate(descriptor, off_t(record.count)) != 0 { throw failure("write") }
        return numbers
    }

    /// `count` numbers from `max(last + 1, now)`; `nil` when they would not fit in 64 bits.
    static func numbers(after last: UInt64, now: UInt64, count: Int) -> ClosedRange<UInt64>? {
        let (next, full) = last.addingReportingOverflow(1)
        guard !full else { return nil }
        let first = max(next, now)
        let (end, overflow) = first.addingReportingOverflow(UInt64(count - 1))
        return overflow ? nil : first...end
    }

    /// `number` right-aligned in ``recordWidth`` bytes, newline included.
    static func record(_ number: UInt64) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: recordWidth) { buffer, count in
            var rest = number
            var index = recordWidth - 1
            buffer[index] = UInt8(ascii: "\n")
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            for padding in 0..<index { buffer[padding] = UInt8(ascii: " ") }
            count = recordWidth
        }
    }

    /// The decimal number `bytes` hold, between optional ASCII whitespace; `nil` for anything else.
    static func number(in bytes: some BidirectionalCollection<UInt8>) -> UInt64? {
        let isSpace = { (byte: UInt8) in byte == 0x20 || (0x09...0x0D).contains(byte) }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }),
            let end = bytes.lastIndex(where: { !isSpace($0) })
        else { return nil }
        var value: UInt64 = 0
        for byte in bytes[start...end] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times10, overflowMultiplying) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowAdding) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflowMultiplying, !overflowAdding else { return nil }
            value = sum
        }
        return value
    }

    /// Opens the file, creating it and, only when they are missing, its directories.
    func openFile() throws -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor >= 0 { return descriptor }
        guard errno == ENOENT || errno == ENOTDIR else { throw failure("open") }
        if let reason = StateDirectory.create((path as NSString).deletingLastPathComponent) {
            throw WarrenError(
                .system,
                "cannot create the directory of the sequence file '\(path)': \(reason)"
                    + StateDirectory.hint(for: path))
        }
        let created = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard created >= 0 else { throw failure("open") }
        return created
    }

    private func failure(_ action: String) -> WarrenError {
        StateDirectory.failure(action, "the sequence file", path)
    }
}
