import AMQP
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The jobs a worker process is executing, kept in a file that outlives the process. When the process dies
/// (killed, crashed, out of memory), a worker of the same broker with the same state directory finds the file no
/// longer locked, reports those jobs on the control stream and removes it (``look(in:broker:own:ignoring:)``).
///
/// One file per running worker, `DIRECTORY/ID.journal`, mapped into memory and under an exclusive `flock` for as
/// long as the worker runs. A job's start and its end are each a store into the mapping, no system call: the
/// kernel keeps what was stored when the process dies, and releases its lock. The file is a header record, then one
/// record per job slot, ``recordSize`` bytes each. The header holds ``header``, the broker the worker took its jobs
/// from and the worker's id, each ending with a newline, NUL-padded; and in its last byte 1 once the worker was
/// asked to stop (``markStopping()``): a worker killed while it stops was killed by whoever stopped it, not by its
/// jobs, and its journal is not reported. Only a worker of the same broker reports a journal: its jobs live there.
/// A slot holds a marker byte (1 while the slot holds an executing job), then the job's id, a tab and its type,
/// NUL-padded. The marker is stored last, so that a process that dies while it writes a record leaves the slot
/// empty.
///
/// Thread safety: locked. Operations record their start and end from their queues' threads; an `NSLock` guards the
/// mapping and its free slots (a `Mutex` would not let the records be copied from the strings' storage under it).
final class CrashJournal: @unchecked Sendable {
    static let recordSize = 256
    static let fileExtension = "journal"
    static let header = "warren crash journal 1\n"

    /// The journal's unique id, the name of its file: reports of one journal count once, however often they are
    /// sent.
    let id: String
    let path: String

    private struct Mapping {
        var descriptor: Int32
        var base: UnsafeMutableRawPointer?
        var slots: Int
        var free: [Int]
    }

    private let lock = NSLock()
    private var mapping: Mapping

    /// Creates the journal of a worker and locks it for as long as this object lives or until ``close()``.
    /// - Parameters:
    ///   - broker: The broker the worker takes its jobs from (``brokerIdentity(clusterName:virtualHost:)``).
    ///   - slots: How many jobs may execute at once (more make the file grow).
    /// - Throws: ``WarrenError`` (`system`) when the directory or the file cannot be created.
    init(directory: String, broker: String, workerID: String, slots: Int) throws {
        if let reason = StateDirectory.create(directory) {
            throw WarrenError(
                .system,
                "cannot create the crash journal directory '\(directory)': \(reason)"
                    + StateDirectory.hint(for: directory + "/"))
        }
        id = UUID().uuidString.lowercased()
        path = "\(directory)/\(id).\(Self.fileExtension)"
        // Created under a hidden name and renamed once locked: a worker looking for orphans never sees it unlocked.
        let temporary = "\(directory)/.\(id).tmp"
        let descriptor = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("create", temporary) }
        let slots = max(slots, 1)
        guard flock(descriptor, LOCK_EX) == 0, let base = Self.map(descriptor, slots: slots) else {
            let error = Self.failure("set up", temporary)
            unlink(temporary)
            SystemCall.close(descriptor)
            throw error
        }
        let prefix = Self.headerPrefix(broker: broker)
        let header = prefix + Array("\(workerID)\n".utf8).prefix(Self.recordSize - 2 - prefix.count)
        header.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        guard rename(temporary, path) == 0 else {
            let error = Self.failure("name", path)
            munmap(base, (slots + 1) * Self.recordSize)
            unlink(temporary)
            SystemCall.close(descriptor)
            throw error
        }
        mapping = Mapping(descriptor: descriptor, base: base, slots: slots, free: Array((0..<slots).reversed()))
    }

    deinit {
        close()
    }

    /// Records that a job started; returns its slot, for ``ended(_:)``, or `nil` once the journal is closed or
    /// when the file cannot grow.
    func began(jobID: String, type: String) -> Int? {
        var jobID = jobID
        var type = type
        // Copied from the strings' own UTF-8 storage: this runs for every job.
        return jobID.withUTF8 { id in
            type.withUTF8 { type in
                lock.withLock { () -> Int? in
                    if mapping.free.isEmpty, !Self.grow(&mapping) { return nil }
                    guard let base = mapping.base else { return nil }
                    let slot = mapping.free.removeLast()
                    let record = base + (slot + 1) * Self.recordSize
                    record.initializeMemory(as: UInt8.self, repeating: 0, count: Self.recordSize)
                    // Marker, id, tab, type and a NUL fit: an id has at most 128 bytes, a long type is cut.
                    let idBytes = min(id.count, Self.recordSize - 3)
                    let typeBytes = min(type.count, Self.recordSize - 3 - idBytes)
                    if let source = id.baseAddress { (record + 1).copyMemory(from: source, byteCount: idBytes) }
                    (record + 1 + idBytes).storeBytes(of: UInt8(ascii: "\t"), as: UInt8.self)
                    if let source = type.baseAddress {
                        (record + 2 + idBytes).copyMemory(from: source, byteCount: typeBytes)
                    }
                    atomicMemoryFence(ordering: .releasing)
                    record.storeBytes(of: 1, as: UInt8.self)
                    return slot
                }
            }
        }
    }

    /// Records that the worker was asked to stop: if it dies now, its jobs are not to blame.
    func markStopping() {
        lock.withLock {
            mapping.base?.storeBytes(of: 1, toByteOffset: Self.recordSize - 1, as: UInt8.self)
        }
    }

    /// Records that the job in `slot` ended.
    func ended(_ slot: Int) {
        lock.withLock {
            guard let base = mapping.base else { return }
            (base + (slot + 1) * Self.recordSize).storeBytes(of: 0, as: UInt8.self)
            mapping.free.append(slot)
        }
    }

    /// Empties and removes the file: the worker stops, and whatever still runs did not crash it.
    func close() {
        lock.withLock {
            guard let base = mapping.base else { return }
            // Emptied before it is unlinked: a worker that opened it meanwhile finds nothing to report.
            ftruncate(mapping.descriptor, 0)
            unlink(path)
            munmap(base, (mapping.slots + 1) * Self.recordSize)
            SystemCall.close(mapping.descriptor)
            mapping.base = nil
        }
    }

    /// How a journal names its broker: the cluster's name (the same on every node, and kept across restarts; a
    /// cluster renamed with `rabbitmqctl set_cluster_name` leaves the journals of the old name to nobody) and the
    /// virtual host.
    static func brokerIdentity(clusterName: String, virtualHost: String) -> String {
        "\(clusterName) \(virtualHost)"
    }

    /// The start of the header of a journal of `broker`, cut to leave room for the stop mark.
    private static func headerPrefix(broker: String) -> [UInt8] {
        Array("\(header)\(broker)\n".utf8.prefix(recordSize - 2))
    }

    private static func map(_ descriptor: Int32, slots: Int) -> UnsafeMutableRawPointer? {
        let size = (slots + 1) * recordSize
        guard ftruncate(descriptor, off_t(size)) == 0 else { return nil }
        let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
        guard let base, base != MAP_FAILED else { return nil }
        return base
    }

    /// Doubles the slots; `false` when the file cannot grow (the mapping is then unchanged).
    private static func grow(_ mapping: inout Mapping) -> Bool {
        guard let base = mapping.base, let grown = map(mapping.descriptor, slots: mapping.slots * 2) else {
            return false
        }
        munmap(base, (mapping.slots + 1) * recordSize)
        mapping.base = grown
        mapping.free += (mapping.slots..<mapping.slots * 2).reversed()
        mapping.slots *= 2
        return true
    }

    private static func failure(_ action: String, _ path: String) -> WarrenError {
        StateDirectory.failure(action, "the crash journal", path)
    }
}

extension CrashJournal {
    /// The journal of a worker that died with jobs executing, locked by this process until ``discard()``: its jobs
    /// are reported, then the file is removed. Released unreported, it stays for the next worker to find.
    ///
    /// Thread safety: confined to the worker's broker thread.
    final class Orphan {
        let id: String
        let workerID: String
        /// The jobs that were executing, by id, with their types.
        let jobs: [(id: String, type: String)]
        private let path: String
        private var descriptor: Int32

        fileprivate init(
            id: String, path: String, descriptor: Int32, workerID: String, jobs: [(id: String, type: String)]
        ) {
            self.id = id
            self.path = path
            self.descriptor = descriptor
            self.workerID = workerID
            self.jobs = jobs
        }

        /// Removes the file: its jobs are reported. Returns whether it is gone (not on a read-only disk).
        @discardableResult
        func discard() -> Bool {
            guard descriptor >= 0 else { return true }
            let removed = unlink(path) == 0
            SystemCall.close(descriptor)
            descriptor = -1
            return removed
        }

        deinit {
            if descriptor >= 0 { SystemCall.close(descriptor) }
        }
    }

    /// What a look at the journal directory found.
    struct Look {
        /// Journals of dead workers, taken by this process.
        var orphans: [Orphan] = []
        /// The jobs executing in the journals locked by other processes: live workers' jobs, and those of dead
        /// workers whose journals another worker took and is reporting (the two cannot be told apart).
        var busy: Set<String> = []
    }

    /// Looks at the journals of `broker`'s workers in `directory`, but `own`. Those of workers that died while jobs
    /// executed are taken: locked for this process. Journals of workers that died idle or stopping are removed at
    /// once; so are files left by a worker that died while creating its journal. Journals of other brokers are left
    /// for their workers.
    /// - Parameter ignoring: Names of files to pass over; files found to be no journals of `broker` are added, so
    ///   that a later look does not read them again.
    static func look(in directory: String, broker: String, own: String?, ignoring: inout Set<String>) -> Look {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return Look() }
        var look = Look()
        for name in names.sorted() where !ignoring.contains(name) && name != own.map({ "\($0).\(fileExtension)" }) {
            let path = "\(directory)/\(name)"
            if name.hasPrefix("."), name.hasSuffix(".tmp") {
                removeIfAbandoned(path)
                continue
            }
            guard name.hasSuffix(".\(fileExtension)") else { continue }
            // Read-only where the directory is: it can still be locked, read and reported (not removed).
            var descriptor = open(path, O_RDWR | O_CLOEXEC)
            if descriptor < 0, errno == EROFS || errno == EACCES { descriptor = open(path, O_RDONLY | O_CLOEXEC) }
            guard descriptor >= 0 else { continue }
            defer { if descriptor >= 0 { SystemCall.close(descriptor) } }
            var status = stat()
            let free = flock(descriptor, LOCK_EX | LOCK_NB) == 0
            // Unlinked meanwhile: its worker closed it, or its reporter is done.
            guard fstat(descriptor, &status) == 0, status.st_nlink > 0 else { continue }
            guard let (workerID, jobs) = read(descriptor, broker: broker) else {
                ignoring.insert(name)
                continue
            }
            if !free {
                look.busy.formUnion(jobs.lazy.map(\.id))
            } else if jobs.isEmpty {
                if unlink(path) != 0 { ignoring.insert(name) }
            } else {
                let id = String(name.dropLast(fileExtension.count + 1))
                look.orphans.append(Orphan(id: id, path: path, descriptor: descriptor, workerID: workerID, jobs: jobs))
                descriptor = -1
            }
        }
        return look
    }

    /// The worker id and the executing jobs a journal file of `broker` holds (none if the worker was stopping);
    /// `nil` if it is not a journal, or one of another broker: the header is read first, and the rest only then.
    private static func read(
        _ descriptor: Int32, broker: String
    ) -> (workerID: String, jobs: [(id: String, type: String)])? {
        var first = [UInt8](repeating: 0, count: recordSize)
        let prefix = headerPrefix(broker: broker)
        guard first.withUnsafeMutableBytes({ pread(descriptor, $0.baseAddress, recordSize, 0) }) == recordSize,
            first.starts(with: prefix)
        else { return nil }
        let workerID = text(first.dropFirst(prefix.count)).split(separator: "\n").first.map(String.init) ?? ""
        guard first.last != 1 else { return (workerID, []) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: max(Int(status.st_size) - recordSize, 0))
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(recordSize)) }
        guard count >= 0 else { return nil }
        let jobs = stride(from: 0, to: count - recordSize + 1, by: recordSize).compactMap {
            offset -> (id: String, type: String)? in
            let record = bytes[offset..<offset + recordSize]
            guard record.first == 1 else { return nil }
            let fields = text(record.dropFirst()).split(separator: "\t", maxSplits: 1)
            guard let id = fields.first, OperationDescriptor.problem(withID: String(id)) == nil else { return nil }
            return (String(id), fields.count > 1 ? String(fields[1]) : "")
        }
        return (workerID, jobs)
    }

    /// The UTF-8 text of `bytes` up to the first NUL.
    private static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Removes a journal left half-created by a worker that died (a minute old and unlocked).
    private static func removeIfAbandoned(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0, Double(status.st_mtim.tv_sec) < Date().timeIntervalSince1970 - 60 else {
            return
        }
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { unlink(path) }
        SystemCall.close(descriptor)
    }
}
