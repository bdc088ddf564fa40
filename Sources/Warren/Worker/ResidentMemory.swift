import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The resident memory of this process, as the kernel counts it in `/proc/self/statm`: Linux only.
///
/// Thread safety: stateless.
enum ResidentMemory {
    /// Whether this system has `/proc/self/statm`. Elsewhere a worker refuses ``Worker/Configuration/maxResidentMemory``.
    static var isSupported: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

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

    /// Log metadata comparing `resident` with `limit`.
    static func metadata(_ resident: Int, limit: Int) -> Logger.Metadata {
        ["residentMemory": "\(describe(resident))", "limit": "\(describe(limit))"]
    }

    /// `412 MiB`, or `1.5 GiB` from a GiB up.
    static func describe(_ bytes: Int) -> String {
        let mebibytes = Double(bytes) / Double(1 << 20)
        guard mebibytes >= 1024 else { return "\(Int(mebibytes.rounded())) MiB" }
        return "\((mebibytes / 1024 * 10).rounded() / 10) GiB"
    }
}
