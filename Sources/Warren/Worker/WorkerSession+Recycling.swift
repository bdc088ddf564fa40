import Foundation
import Glibc
import Logging

/// Recycling (``Worker/Configuration/maxJobs``, ``Worker/Configuration/maxResidentMemory``): a worker that took its
/// last job, or grew past its memory limit, stops so that a fresh process takes its place, with
/// ``Worker/stoppedToRecycle`` set.
extension WorkerSession {
    /// Counts a job taken to run. The last one ``Worker/Configuration/maxJobs`` allows stops the job consumers: the
    /// worker runs what it holds, then stops (``stopIfRetired()``).
    func jobTaken() throws {
        guard let maxJobs = configuration.maxJobs else { return }
        jobsTaken += 1
        guard jobsTaken >= maxJobs else { return }
        try retire(.maxJobs, because: "took the most jobs this worker may take", metadata: ["maxJobs": "\(maxJobs)"])
    }

    /// After a turn in which jobs ended: past ``Worker/Configuration/maxResidentMemory``, the worker takes no more
    /// jobs and sends those it holds that have not started back to the broker; it stops once the executing ones end.
    func recycleIfOverMemory() throws {
        guard jobsEndedSinceMemoryCheck, let limit = configuration.maxResidentMemory else { return }
        jobsEndedSinceMemoryCheck = false
        guard recycling == nil, stopDeadline == nil, let resident = ResidentMemory.bytes(), resident > limit else {
            return
        }
        try retire(
            .maxMemory, because: "resident memory is past the limit; jobs not started go back to the broker",
            metadata: ["residentMemory": "\(ResidentMemory.describe(resident))", "limit": "\(ResidentMemory.describe(limit))"])
        for job in inFlight.values where !job.operation.hasStarted {
            job.operation.cancel(Cancellation(reason: "shutdown", message: "the worker is starting afresh"))
        }
    }

    /// Stops taking jobs, to stop once those held ended.
    private func retire(_ limit: RecyclingLimit, because reason: String, metadata: Logger.Metadata) throws {
        guard recycling == nil, stopDeadline == nil else { return }
        recycling = limit.rawValue
        worker.stoppedToRecycle = true
        logger.info("recycling: \(reason); taking no more jobs, and starting afresh once they end", metadata: metadata)
        for queue in Set(jobConsumers.values) { try cancelConsumers(of: queue) }
    }

    /// Stops a retiring worker once it holds no job that can run: jobs still waiting for their dependencies go back
    /// to the broker, as when it stops.
    func stopIfRetired() {
        guard recycling != nil, stopDeadline == nil, inFlight.keys.allSatisfy({ parked[$0] != nil }) else { return }
        logger.info("recycling: the jobs taken have ended; stopping", metadata: ["sentBack": "\(inFlight.count)"])
        beginStop(announcing: false)
    }

    /// Warns, as the worker starts, when its memory is past the limit already: it then starts afresh after every job.
    func warnIfOverMemoryAtStart() {
        guard let limit = configuration.maxResidentMemory, let resident = ResidentMemory.bytes(), resident > limit
        else { return }
        logger.warning(
            "resident memory is past the limit already: this worker will start afresh after every job",
            metadata: ["residentMemory": "\(ResidentMemory.describe(resident))", "limit": "\(ResidentMemory.describe(limit))"])
    }
}

/// The limit that made a worker recycle, as `warren status` names it.
enum RecyclingLimit: String {
    case maxJobs, maxMemory
}

/// The resident memory of this process, as the kernel counts it in `/proc/self/statm`.
///
/// Thread safety: stateless.
enum ResidentMemory {
    /// The resident set size in bytes; `nil` where `/proc` cannot be read.
    static func bytes() -> Int? {
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        // Sizes in pages: total, resident, shared, …
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// `412 MiB`, or `1.5 GiB` from a GiB up.
    static func describe(_ bytes: Int) -> String {
        let mebibytes = Double(bytes) / Double(1 << 20)
        guard mebibytes >= 1024 else { return "\(Int(mebibytes.rounded())) MiB" }
        return "\((mebibytes / 1024 * 10).rounded() / 10) GiB"
    }
}
