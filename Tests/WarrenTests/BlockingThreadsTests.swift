import Foundation
import Testing

@testable import Warren

#if canImport(Glibc)
    import Glibc
#endif

@Suite("BlockingThreads")
struct BlockingThreadsTests {
    @Test func withASlotFreeTheCodeRunsOnTheCallingThread() {
        let threads = BlockingThreads(inlineSlots: 1)
        let caller = pthread_self()
        let ranHere = Locked(false)
        #expect(threads.runInline { ranHere.withLock { $0 = pthread_equal(pthread_self(), caller) != 0 } })
        #expect(ranHere.value, "it returned after the code, which ran here")
        #expect(threads.counts.threads == 0)
    }

    @Test func withoutOneItDeclinesAndAHandedOffCodeRunsOnAThreadOfItsOwn() async throws {
        let threads = BlockingThreads(inlineSlots: 0)
        let ran = Locked(false)
        #expect(!threads.runInline { ran.withLock { $0 = true } })
        #expect(!ran.value)
        let gate = Gate()
        let inside = Locked<[UInt]>([])
        for _ in 0..<3 {
            threads.handOff { _ in
                inside.withLock { $0.append(UInt(pthread_self())) }
                gate.wait()
            }
        }
        #expect(threads.counts.threads == 3, "each found no idle thread, and returned while its code runs")
        try await waitUntil("the three to run at once") { inside.value.count == 3 }
        #expect(Set(inside.value).count == 3)
        gate.open()
    }

    @Test func anIdleThreadTakesTheNextWork() async throws {
        let threads = BlockingThreads(inlineSlots: 0)
        let all = Locked<[UInt]>([])
        for _ in 0..<3 {
            let before = all.value.count
            threads.handOff { _ in all.withLock { $0.append(UInt(pthread_self())) } }
            try await waitUntil("the work to run") { all.value.count == before + 1 }
            try await waitUntil("its thread to be idle again") { threads.counts.idle == 1 }
        }
        #expect(Set(all.value).count == 1)
        #expect(threads.counts.threads == 1)
    }

    @Test func workHandedOffAsAThreadsWorkEndsTakesThatThread() async throws {
        // As a finishing job's local queue starts the next job, which comes here before the thread is idle again.
        let threads = BlockingThreads(inlineSlots: 0)
        let done = Locked(0)
        for _ in 0..<5 {
            let before = done.value
            threads.handOff { returning in
                returning()
                threads.handOff { _ in done.withLock { $0 += 1 } }
                done.withLock { $0 += 1 }
            }
            try await waitUntil("both pieces of work to run") { done.value == before + 2 }
        }
        #expect(threads.counts.threads == 1)
    }

    @Test func anIdleThreadEndsAfterItsLifetime() async throws {
        let threads = BlockingThreads(inlineSlots: 0, idleLifetime: 0.05)
        let ran = Locked(false)
        threads.handOff { _ in ran.withLock { $0 = true } }
        try await waitUntil("the work to run") { ran.value }
        try await waitUntil("its thread to end") { threads.counts == (0, 0) }
    }
}
