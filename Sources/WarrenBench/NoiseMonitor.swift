import Foundation
import Synchronization

/// Watches, twice a second on a thread of its own, whether a Swift compiler runs on the machine while the
/// benchmark measures: on two cores a compiler takes about a core, and the figures then say little.
///
/// Thread safety: `Sendable`; the flags are atomics, the thread reads `/proc` only.
final class NoiseMonitor: Sendable {
    private let sawCompiler = Atomic(false)
    private let stopping = Atomic(false)
    private let done = DispatchSemaphore(value: 0)

    /// Starts watching.
    init() {
        let thread = Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                if ProcessSnapshot.isCompilerRunning() { sawCompiler.store(true, ordering: .relaxed) }
                Thread.sleep(forTimeInterval: 0.5)
            }
            done.signal()
        }
        thread.name = "warren.bench.noise"
        thread.start()
    }

    /// Stops watching and tells whether a compiler ran meanwhile. Safe to call twice.
    func stop() -> Bool {
        stopping.store(true, ordering: .relaxed)
        done.wait()
        done.signal()  // a later call returns at once
        return sawCompiler.load(ordering: .relaxed)
    }
}
