import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The ids of the jobs this host's producers enqueued (recorded as they are handed to the broker), so that a new job
/// may depend on them and an unknown id is caught before anything is published. Kept next to the sequence file:
/// at least its newest 8 MiB, trimmed to them once it is half as large again.
///
/// Thread safety: immutable; an exclusive `flock` serialises concurrent writers, threads and processes alike.
struct JobJournal: Sendable {
    let path: String
    static let limit = 8 << 20

    /// Records `ids` as enqueued.
    func append(_ ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try withLockedFile { descriptor in
            let size = lseek(descriptor, 0, SEEK_END)
            if size > Self.limit + Self.limit / 2 {
                let keep = Array(try read(descriptor).suffix(Self.limit))
                let start = keep.firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
                let rest = Array(keep[start...])
                guard ftruncate(descriptor, 0) == 0, pwrite(descriptor, rest, rest.count, 0) == rest.count else {
                    throw failure("trim")
                }
            }
            let text = Array(ids.map { $0 + "\n" }.joined().utf8)
            guard pwrite(descriptor, text, text.count, lseek(descriptor, 0, SEEK_END)) == text.count else {
                throw failure("write")
            }
        }
    }

    /// Records `ids`, recorded as they were about to leave, as refused by the broker after all (a `basic.nack`, a
    /// return, an `ACCESS_REFUSED`): a line `~ID` each (`~` is in no job id), which takes the id back for
    /// ``known(_:)``.
    func retract(_ ids: [String]) throws {
        try append(ids.map { "~" + $0 })
    }

    /// The ids among `ids` that this host enqueued: none when there is no journal yet (nor its directory). An id's
    /// last line counts: `ID` recorded it, `~ID` took it back.
    func known(_ ids: Set<String>) throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        guard access(path, F_OK) == 0 else {
            // No journal yet: nothing was enqueued with this state directory. Anything else (a state directory
            // that is a file, one this user may not enter) is no answer.
            if errno == ENOENT { return [] }
            throw failure("open")
        }
        return try withLockedFile { descriptor in
            var known: Set<String> = []
            for line in try read(descriptor).split(separator: UInt8(ascii: "\n")) {
                let retracted = line.first == UInt8(ascii: "~")
                let id = String(decoding: retracted ? line.dropFirst() : line[...], as: UTF8.self)
                guard ids.contains(id) else { continue }
                if retracted { known.remove(id) } else { known.insert(id) }
            }
            return known
        }
    }

    private func withLockedFile<T>(_ body: (Int32) throws -> T) throws -> T {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("open") }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw failure("lock") }
        return try body(descriptor)
    }

    private func read(_ descriptor: Int32) throws -> [UInt8] {
        let size = Int(lseek(descriptor, 0, SEEK_END))
        var buffer = [UInt8](repeating: 0, count: size)
        guard size == 0 || pread(descriptor, &buffer, size, 0) == size else { throw failure("read") }
        return buffer
    }

    private func failure(_ action: String) -> WarrenError {
        StateDirectory.failure(action, "the job journal", path)
    }
}
