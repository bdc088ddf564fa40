import Foundation
import Glibc
import Testing

@testable import AMQP

@Suite("WakeUpSignal")
struct WakeUpSignalTests {
    /// Whether the read end is readable right now (a zero-timeout poll: no waiting).
    private func isReadable(_ signal: WakeUpSignal) -> Bool {
        var descriptor = pollfd(fd: signal.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLIN) != 0
    }

    @Test func signalMakesTheDescriptorReadableAndResetClearsIt() {
        let signal = WakeUpSignal()
        #expect(!isReadable(signal))
        signal.signal()
        #expect(isReadable(signal))
        signal.reset()
        #expect(!isReadable(signal))
    }

    @Test func manySignalsNeverBlockAndOneResetClearsThemAll() {
        let signal = WakeUpSignal()
        // More than a pipe buffer holds: the write end is non-blocking, so a full pipe drops the byte instead.
        for _ in 0..<100_000 { signal.signal() }
        #expect(isReadable(signal))
        signal.reset()
        #expect(!isReadable(signal))
    }

    @Test func waitReturnsOnceSignalledAndClearsTheSignal() {
        let signal = WakeUpSignal()
        signal.signal()
        // Already raised: returns at once; the generous timeout only bounds a hang.
        signal.wait(timeout: .seconds(10))
        #expect(!isReadable(signal))
    }

    @Test func waitReturnsWhenAnotherThreadSignals() {
        let signal = WakeUpSignal()
        let thread = Thread { signal.signal() }
        thread.start()
        signal.wait(timeout: .seconds(10))
        #expect(!isReadable(signal))
    }

    @Test func bothEndsCloseOnExec() {
        let signal = WakeUpSignal()
        #expect(fcntl(signal.descriptor, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(signal.descriptor, F_GETFL) & O_NONBLOCK != 0)
    }
}
