import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A process's CPU time and memory as the kernel reports them in `/proc`, Linux only.
///
/// CPU comes from `utime + stime` in `/proc/PID/stat` (clock ticks, usually 10 ms each: measure over thousands of
/// jobs), memory from `VmRSS` and `VmHWM` (peak RSS) in `/proc/PID/status`.
public struct ProcessSnapshot: Sendable {
    /// User plus system CPU time of every thread so far, exited threads included.
    public var cpuSeconds: Double
    /// Resident set size now, in bytes.
    public var residentBytes: Int
    /// The highest resident set size so far, in bytes.
    public var peakResidentBytes: Int

    /// Reads the snapshot of process `pid`.
    /// - Throws: ``BenchError`` when the process is gone or `/proc` cannot be read.
    public init(pid: Int32) throws {
        let fields = try Self.statFields(pid)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        cpuSeconds = (Double(fields[11]) ?? 0) / ticks + (Double(fields[12]) ?? 0) / ticks
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            throw BenchError("cannot read /proc/\(pid)/status: the process is gone")
        }
        var memory: [String: Int] = [:]
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") || line.hasPrefix("VmHWM:") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if parts.count >= 2, let kilobytes = Int(parts[1]) { memory[String(parts[0])] = kilobytes * 1024 }
        }
        residentBytes = memory["VmRSS:"] ?? 0
        peakResidentBytes = memory["VmHWM:"] ?? 0
    }

    /// The CPU seconds of `pid` and every process descended from it: a broker started by a wrapper script runs
    /// its virtual machine in a child process.
    public static func treeCPUSeconds(root pid: Int32) -> Double {
        var children: [Int32: [Int32]] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let child = Int32(entry), let fields = try? statFields(child), let parent = Int32(fields[1]) else {
                continue
            }
            children[parent, default: []].append(child)
        }
        var total = 0.0
        var pending = [pid]
        while let next = pending.popLast() {
            total += (try? ProcessSnapshot(pid: next))?.cpuSeconds ?? 0
            pending += children[next] ?? []
        }
        return total
    }

    /// The fields of `/proc/PID/stat` after the command name: index 0 is the state, 1 the parent pid, 11 `utime`,
    /// 12 `stime`.
    private static func statFields(_ pid: Int32) throws -> [String] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { throw BenchError("cannot read /proc/\(pid)/stat: the process is gone") }
        let fields = text[text.index(after: close)...].split(separator: " ").map(String.init)
        guard fields.count > 12 else { throw BenchError("unexpected /proc/\(pid)/stat format") }
        return fields
    }

    /// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), in seconds.
    static func currentThreadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Whether a Swift compiler (`swift-frontend`) is running on this machine: it competes for the cores and makes
    /// the figures noisy.
    public static func isCompilerRunning() -> Bool {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.contains { entry in
            guard Int(entry) != nil,
                let name = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8)
            else { return false }
            return name.hasPrefix("swift-frontend")
        }
    }
}
