import AMQP
import Synchronization

/// The hand-off from any thread to a broker thread: messages queue behind a lock and wake the thread's `poll`.
///
/// A post wakes the owning thread only when it sleeps (``sleep(_:)``): while it is busy, it drains the mailbox
/// before it sleeps again, so posts then cost no system call, and many finished jobs are handled in one turn.
///
/// Thread safety: locked. `post` is safe from any thread; `drain` and `sleep` are called by the owning thread.
package final class Mailbox<Message: Sendable>: Sendable {
    private struct State {
        var messages: [Message] = []
        /// Whether the owning thread sleeps, or is about to: the next post must signal ``wakeUp``.
        var isSleeping = false
    }

    private let state = Mutex(State())
    /// Watched by the broker thread's `poll` beside its socket.
    package let wakeUp = WakeUpSignal()

    package init() {}

    package func post(_ message: Message) {
        let wakes = state.withLock { state in
            state.messages.append(message)
            let wasSleeping = state.isSleeping
            state.isSleeping = false
            return wasSleeping
        }
        if wakes { wakeUp.signal() }
    }

    /// Runs `wait`, which must return once ``wakeUp`` is signalled, unless messages are already waiting.
    package func sleep(_ wait: () -> Void) {
        let sleeps = state.withLock { state in
            state.isSleeping = state.messages.isEmpty
            return state.isSleeping
        }
        guard sleeps else { return }
        wait()
        state.withLock { $0.isSleeping = false }
    }

    /// Whether a message waiting matches `isIt`; takes none out.
    package func contains(where isIt: (Message) -> Bool) -> Bool {
        state.withLock { $0.messages.contains(where: isIt) }
    }

    package func drain() -> [Message] {
        state.withLock { state in
            defer { state.messages.removeAll(keepingCapacity: true) }
            return state.messages
        }
    }

    /// Drains the mailbox and hands each message to `body`, in order. When `body` throws, that message and the
    /// ones after it go back to the front of the mailbox, before anything posted since, so none is lost.
    package func handleEach(_ body: (Message) throws -> Void) rethrows {
        let drained = drain()
        for index in drained.indices {
            do {
                try body(drained[index])
            } catch {
                let unhandled = drained[index...]
                state.withLock { $0.messages.insert(contentsOf: unhandled, at: 0) }
                throw error
            }
        }
    }
}
