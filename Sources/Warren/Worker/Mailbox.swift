import AMQP
import Synchronization

/// The hand-off from any thread to a broker thread: messages queue behind a lock and wake the thread's `poll`.
///
/// Thread safety: locked. `post` is safe from any thread; `drain` is called by the owning broker thread.
final class Mailbox<Message: Sendable>: Sendable {
    private let messages = Mutex<[Message]>([])
    /// Watched by the broker thread's `poll` beside its socket.
    let wakeUp = WakeUpSignal()

    func post(_ message: Message) {
        let wasEmpty = messages.withLock { messages in
            messages.append(message)
            return messages.count == 1
        }
        if wasEmpty { wakeUp.signal() }
    }

    func drain() -> [Message] {
        messages.withLock { messages in
            defer { messages.removeAll(keepingCapacity: true) }
            return messages
        }
    }

    /// Drains the mailbox and hands each message to `body`, in order. When `body` throws, that message and the
    /// ones after it go back to the front of the mailbox, before anything posted since, so none is lost.
    func handleEach(_ body: (Message) throws -> Void) rethrows {
        let drained = drain()
        for index in drained.indices {
            do {
                try body(drained[index])
            } catch {
                let unhandled = drained[index...]
                messages.withLock { $0.insert(contentsOf: unhandled, at: 0) }
                wakeUp.signal()
                throw error
            }
        }
    }
}
