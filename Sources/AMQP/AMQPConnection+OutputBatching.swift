import Glibc

/// Sending what a turn of a loop wrote in as few TCP segments as possible.
///
/// librabbitmq writes each frame with a system call of its own, and the kernel sends each publish as a segment of
/// its own. On loopback above all, the segment is what costs: the sender's kernel delivers it to the broker, and the
/// broker wakes to read it. Held output (Linux `TCP_CORK`) leaves in full segments instead: the publishes, acks and
/// confirms of a whole turn cost the broker one read.
extension AMQPConnection {
    /// Holds what is written from now on in the kernel until ``flushOutput()``, which ``waitForActivity(wakeUp:timeout:)``,
    /// every request that waits for a reply, and ``close()`` call first: nothing waits for held output. The kernel
    /// sends held output after 200 ms at the latest.
    public func holdOutput() {
        guard !isHoldingOutput else { return }
        isHoldingOutput = setCork(true)
    }

    /// Sends held output now, and stops holding.
    public func flushOutput() {
        guard isHoldingOutput else { return }
        isHoldingOutput = false
        _ = setCork(false)
    }

    private func setCork(_ on: Bool) -> Bool {
        var value: Int32 = on ? 1 : 0
        return setsockopt(
            socketDescriptor, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
    }
}
