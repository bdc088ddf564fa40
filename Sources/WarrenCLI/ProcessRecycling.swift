import Foundation
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How `warren worker` starts afresh when its worker stops to recycle (`--max-jobs`, `--max-memory`): the process
/// replaces itself with a fresh copy, same executable, arguments, environment and process id, so that a supervisor
/// sees it run on.
///
/// What the worker hands over travels in the environment variable `WARREN_RECYCLED`: that the copy is one, so that
/// its worker waits for the broker rather than exits when it cannot reach it at once; when each rate-limited
/// type's next turn comes, so that starting afresh makes no burst; and which file descriptors the first process of
/// the line inherited from whatever started it.
/// Thread safety: immutable.
struct ProcessRecycling: Codable, Sendable, Equatable {
    /// Seconds from the handover until the next job of each rate-limited type may start.
    var rateLimitTurns: [String: Double] = [:]
    /// The descriptors open when the first process of the line made its worker: what its parent gave it (a
    /// supervisor may watch one to learn when the process ends, as Foundation's `Process` does), which stay open
    /// across every exec; all others close.
    var inheritedDescriptors: [Int32] = []

    static let variable = "WARREN_RECYCLED"

    /// The signals that stop a worker (or a scheduler) gracefully: SIGINT, SIGTERM, and SIGHUP, which a closed
    /// terminal or SSH session sends (its default action, an immediate exit, would count the executing jobs as
    /// crashes).
    static let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// The handover this process was started with, removed from its environment so that no process it starts
    /// inherits it; `nil` for a process that is no fresh copy. A value that is no handover (set by hand) counts as
    /// none. In a fresh copy, the process is named after its command again.
    static func take() -> ProcessRecycling? {
        guard let text = ProcessInfo.processInfo.environment[variable] else { return nil }
        unsetenv(variable)
        let handover = try? JSONDecoder().decode(ProcessRecycling.self, from: Data(text.utf8))
        if handover != nil { restoreProcessName() }
        return handover
    }

    /// What the worker of a fresh copy takes over.
    var workerHandover: Worker.Handover {
        Worker.Handover(rateLimitTurns: rateLimitTurns)
    }

    /// Replaces the calling process with a fresh copy of itself, handing `handover` over. Call it once the worker
    /// returned with ``Worker/stoppedToRecycle`` set and everything else of the process is stopped.
    ///
    /// File descriptors the process opened are closed across it, so that none piles up from one copy to the next;
    /// the ``inheritedDescriptors`` stay open. The ``stopSignals`` are blocked across it and stay blocked in the
    /// copy: one that came meanwhile stops the copy as soon as its worker is made (``takeStopSignalsHeldAcrossExec()``),
    /// and later ones reach a `DispatchSource` for them.
    /// - Parameter stopped: Whether a stop came since the worker stopped to recycle: the process then does not start
    ///   afresh, and this returns.
    /// - Throws: ``WarrenError`` (`system`) when the kernel refuses to run the executable again.
    func exec(unless stopped: () -> Bool) throws {
        var stopping = sigset_t()
        sigemptyset(&stopping)
        for number in Self.stopSignals { sigaddset(&stopping, number) }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &stopping, &previous)
        guard !stopped() else {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            return
        }
        let encoded = (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) }
        setenv(Self.variable, encoded ?? "{}", 1)
        for descriptor in Self.openDescriptors() where descriptor > 2 && !inheritedDescriptors.contains(descriptor) {
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
        let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
        execv(Self.runningExecutable, arguments)
        let reason = String(cString: strerror(errno))
        arguments.forEach { free($0) }
        unsetenv(Self.variable)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        throw WarrenError(.system, "cannot start this worker afresh: \(reason)")
    }

    /// The file descriptors open in this process.
    static func openDescriptors() -> Set<Int32> {
        // macOS lists them in /dev/fd.
        #if os(Linux)
            let directory = "/proc/self/fd"
        #else
            let directory = "/dev/fd"
        #endif
        let listed = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        // The listing's own descriptor is closed by now.
        return Set(listed.compactMap(Int32.init).filter { fcntl($0, F_GETFD) != -1 })
    }

    /// In a fresh copy of a recycled process: takes the ``stopSignals`` held back across the exec; whether one
    /// came. They stay blocked: a `DispatchSource` for them receives the next ones (it reads them through a
    /// `signalfd`), and no default action can end the process before it is ready for them.
    static func takeStopSignalsHeldAcrossExec() -> Bool {
        var stopping = sigset_t()
        sigemptyset(&stopping)
        for number in Self.stopSignals { sigaddset(&stopping, number) }
        var pending = sigset_t()
        sigpending(&pending)
        var came = false
        while Self.stopSignals.contains(where: { sigismember(&pending, $0) == 1 }) {
            // A signal pending: the wait takes it at once. macOS has sigwait only.
            #if os(Linux)
                var none = timespec()
                guard sigtimedwait(&stopping, nil, &none) > 0 else { break }
            #else
                var number: Int32 = 0
                guard sigwait(&stopping, &number) == 0 else { break }
            #endif
            came = true
            sigpending(&pending)
        }
        return came
    }

    /// Names the process after its command again (`ps`, `pgrep -x`), which an exec of `/proc/self/exe` names `exe`.
    private static func restoreProcessName() {
        // Elsewhere than Linux, an exec keeps the name of the path it ran.
        #if os(Linux)
            guard let command = CommandLine.arguments.first else { return }
            let name = URL(fileURLWithPath: command).lastPathComponent.prefix(15)
            try? Data(name.utf8).write(to: URL(fileURLWithPath: "/proc/self/comm"))
        #endif
    }

    /// The file this process runs, by its path while that path still names it, so that the fresh copy keeps its name
    /// in `ps` and `pgrep`; `/proc/self/exe` once the file was deleted or replaced.
    private static var runningExecutable: String {
        #if !os(Linux)
            return Bundle.main.executablePath ?? CommandLine.arguments[0]
        #else
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
            guard count > 0 else { return "/proc/self/exe" }
            let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var running = stat()
            var named = stat()
            guard stat("/proc/self/exe", &running) == 0, stat(path, &named) == 0, running.st_ino == named.st_ino,
                running.st_dev == named.st_dev
            else { return "/proc/self/exe" }
            return path
        #endif
    }
}
