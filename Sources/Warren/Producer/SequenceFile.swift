#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``SequenceStore``'s file kept open between reservations, for a producer that reserves numbers for every
/// `enqueue`: each reservation then costs the lock, a read and a write, not also an open and a close.
///
/// The open description is dropped and the path opened again when the file it refers to has no name left (deleted,
/// or replaced by a rename): reservations always go through the file at ``SequenceStore/path``, as every other
/// producer's on the host do.
///
/// Thread safety: confined to the thread of the ``Producer`` that owns it.
final class SequenceFile {
    let store: SequenceStore
    private var descriptor: Int32 = -1

    init(_ store: SequenceStore) {
        self.store = store
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Reserves `count` consecutive numbers, as ``SequenceStore/reserve(_:)`` does.
    func reserve(_ count: Int) throws -> ClosedRange<UInt64> {
        if descriptor >= 0, !isStillNamed {
            close(descriptor)
            descriptor = -1
        }
        if descriptor < 0 { descriptor = try store.openFile() }
        do {
            return try store.reserve(count, in: descriptor)
        } catch {
            // Whatever went wrong, the next reservation starts from the path again.
            close(descriptor)
            descriptor = -1
            throw error
        }
    }

    /// Reserves the next number.
    func next() throws -> UInt64 {
        try reserve(1).lowerBound
    }

    /// Whether the open file still has a name: it was neither deleted nor replaced.
    private var isStillNamed: Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && status.st_nlink > 0
    }
}
