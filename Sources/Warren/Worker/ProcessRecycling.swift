import Foundation
import Glibc

extension Worker {
    /// Replaces the calling process with a fresh copy of itself: the same executable (`/proc/self/exe`, even if its
    /// file was replaced since), arguments and environment, and the same process id, so that a supervisor sees it
    /// run on. Call it once ``run()`` returned with ``stoppedToRecycle`` set and everything else of the process is
    /// stopped.
    ///
    /// File descriptors other than standard input, output and error are closed across it, so that none piles up
    /// from one copy to the next; SIGINT and SIGTERM are back to their default action until the new copy handles
    /// them again.
    /// - Throws: ``WarrenError`` (`system`) when the kernel refuses to run the executable again; it
    ///   returns only then.
    public static func recycleProcess() throws -> Never {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in descriptors.compactMap(Int32.init) where descriptor > 2 {
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
        for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
        let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", arguments)
        let reason = String(cString: strerror(errno))
        arguments.forEach { free($0) }
        throw WarrenError(.system, "cannot start this worker afresh: \(reason)")
    }
}
