import Foundation
import Synchronization

/// The threads the local queues provide for the code of blocking operations.
///
/// Foundation's `OperationQueue` calls each operation's `start()` on a thread of libdispatch's shared pool, which on
/// Linux has about as many threads as cores and adds more only slowly (about two a second) while they are all
/// blocked: a local queue 20 wide, full of blocking jobs, would take ten seconds to run 20 of them at once, and a
/// narrowed one (`warren resize`) would still start the operations it had already handed to the pool. So blocking
/// code holds at most ``inlineSlots`` of the pool's threads, process-wide, and runs on a thread of this pool
/// otherwise: `start()` returns at once, and the operation stays executing until its code ends. Its threads are made
/// as needed (the queues' widths bound how many run at once) and end after a minute idle.
///
/// Thread safety: locked. The work list and the thread counts are behind `condition`, the inline slots atomic.
final class BlockingThreads: @unchecked Sendable {
    static let shared = BlockingThreads()

    /// How many threads of libdispatch's pool blocking code may hold at once, process-wide: all but one of the
    /// cores', so that the pool always has a thread to start operations (and that on one core, none). The first
    /// blocking jobs run where the queue started them, without a hand-off to another thread.
    private let inlineSlots: Atomic<Int>
    private let condition = NSCondition()
    private var work: [@Sendable (_ returning: () -> Void) -> Void] = []
    private var idle = 0
    /// Threads whose work is about to end (``handOff(_:)``), which take the next work before they wait.
    private var returning = 0
    private var threads = 0
    /// How long a thread waits for work before it ends.
    private let idleLifetime: TimeInterval

    init(
        inlineSlots: Int = max(ProcessInfo.processInfo.activeProcessorCount - 1, 0), idleLifetime: TimeInterval = 60
    ) {
        self.inlineSlots = Atomic(inlineSlots)
        self.idleLifetime = idleLifetime
    }

    /// Runs `body` on the calling thread (a thread of libdispatch's pool, in `start()`) if one of the slots is free,
    /// and returns `true` once it ran; `false` at once if none is: then ``handOff(_:)`` it.
    func runInline(_ body: () -> Void) -> Bool {
        guard inlineSlots.subtract(1, ordering: .acquiring).newValue >= 0 else {
            inlineSlots.add(1, ordering: .relaxed)
            return false
        }
        body()
        inlineSlots.add(1, ordering: .releasing)
        return true
    }

    /// Runs `body` on a thread of this pool: an idle one, one whose work is about to end, or a new one. `body` calls
    /// `returning` as its work is about to end (before it reports the job finished, which lets its local queue start
    /// the next, which may well come here): so that the next work waits for that thread rather than make one more.
    func handOff(_ body: @escaping @Sendable (_ returning: () -> Void) -> Void) {
        condition.lock()
        work.append(body)
        let spawns = work.count > idle + returning
        if spawns { threads += 1 } else { condition.signal() }
        condition.unlock()
        if spawns {
            let thread = Thread { [self] in serve() }
            thread.name = "warren.blocking"
            thread.start()
        }
    }

    /// How many threads it has, and how many of them wait for work.
    var counts: (threads: Int, idle: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (threads, idle)
    }

    /// A thread's life: runs work as it comes, and ends after ``idleLifetime`` without any.
    private func serve() {
        condition.lock()
        while true {
            while work.isEmpty {
                idle += 1
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleLifetime))
                idle -= 1
                if !signalled && work.isEmpty {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let body = work.removeFirst()
            condition.unlock()
            var announced = false
            body {
                guard !announced else { return }
                announced = true
                condition.lock()
                returning += 1
                condition.unlock()
            }
            condition.lock()
            if announced { returning -= 1 }
        }
    }
}
