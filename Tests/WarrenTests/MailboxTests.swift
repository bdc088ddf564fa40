import Foundation
import Testing

@testable import Warren

@Suite("Mailbox")
struct MailboxTests {
    @Test func drainsEverythingPostedInOrder() {
        let mailbox = Mailbox<Int>()
        #expect(mailbox.drain().isEmpty)
        for value in 1...5 { mailbox.post(value) }
        #expect(mailbox.drain() == [1, 2, 3, 4, 5])
        #expect(mailbox.drain().isEmpty)
    }

    @Test func keepsEveryMessageFromManyThreads() async throws {
        let mailbox = Mailbox<Int>()
        let threads = 4
        let perThread = 500
        let done = Locked(0)
        for thread in 0..<threads {
            Thread {
                for index in 0..<perThread { mailbox.post(thread * perThread + index) }
                done.withLock { $0 += 1 }
            }.start()
        }
        var received: [Int] = []
        try await waitUntil("all posts") {
            received += mailbox.drain()
            return done.value == threads && received.count == threads * perThread
        }
        #expect(Set(received) == Set(0..<threads * perThread))
        // Each thread's messages arrive in the order it posted them.
        for thread in 0..<threads {
            let mine = received.filter { $0 / perThread == thread }
            #expect(mine == mine.sorted())
        }
    }

    @Test func messagesNotHandledGoBackToTheFrontInOrder() {
        struct Lost: Error {}
        let mailbox = Mailbox<Int>()
        for value in 1...5 { mailbox.post(value) }
        var handled: [Int] = []
        #expect(throws: Lost.self) {
            try mailbox.handleEach { value in
                if value == 3 { throw Lost() }
                handled.append(value)
            }
        }
        #expect(handled == [1, 2])
        mailbox.post(6)
        #expect(mailbox.drain() == [3, 4, 5, 6])
    }

    @Test func handlesEverythingWhenNothingThrows() {
        let mailbox = Mailbox<Int>()
        for value in 1...3 { mailbox.post(value) }
        var handled: [Int] = []
        mailbox.handleEach { handled.append($0) }
        #expect(handled == [1, 2, 3])
        #expect(mailbox.drain().isEmpty)
    }
}

@Suite("Mailbox sleep")
struct MailboxSleepTests {
    @Test func doesNotSleepWhenMessagesWait() {
        let mailbox = Mailbox<Int>()
        mailbox.post(1)
        var slept = false
        mailbox.sleep { slept = true }
        #expect(!slept)
        #expect(mailbox.drain() == [1])
    }

    @Test func aPostWakesTheSleeper() async throws {
        let mailbox = Mailbox<Int>()
        let woke = Locked(false)
        let asleep = Locked(false)
        Thread {
            // A wait far longer than the test's own deadline: only the post can end it in time.
            mailbox.sleep {
                asleep.withLock { $0 = true }
                mailbox.wakeUp.wait(timeout: .seconds(120))
            }
            woke.withLock { $0 = true }
        }.start()
        try await waitUntil("the owner to sleep") { asleep.value }
        mailbox.post(7)
        try await waitUntil("the post to wake the owner", timeout: .seconds(60)) { woke.value }
        #expect(mailbox.drain() == [7])
    }
}
