import Glibc

/// Sending what a turn of a loop wrote in as few TCP segments as possible.
///
/// librabbitmq writes each frame with a system call of its own, and the kernel sends each publish as a segment of
/// its own. On loopback above all, the segment is what costs: the sender's kernel delivers it to the broker, and the
/// broker wakes to read it. Held output (Linux `TCP_CORK`) leaves in full segments instead: the publishes and acks
/// of a whole turn cost the broker one read.
extension AMQPConnection {
    /// Whether output is held.
    enum OutputHold {
        /// Frames leave as they are written.
        case off
        /// Output is to be held from the next publish on: a turn that only acks costs no extra system call.
        case requested
        /// The socket is corked.
        case corked
    }

    /// Holds what is written from the next publish on in the kernel until ``flushOutput()``, which
    /// ``waitForActivity(wakeUp:timeout:)``, every request that waits for a reply, and ``close()`` call first:
    /// nothing waits for held output. The kernel sends held output after 200 ms at the latest.
    public func holdOutput() {
        if outputHold == .off { outputHold = .requested }
    }

    /// Sends held output now, and stops holding.
    public func flushOutput() {
        if outputHold == .corked { _ = setCork(false) }
        outputHold = .off
    }

    /// Corks the socket if ``holdOutput()`` asked for it; called before a publish.
    func corkIfRequested() {
        guard outputHold == .requested else { return }
        outputHold = setCork(true) ? .corked : .off
    }

    private func setCork(_ on: Bool) -> Bool {
        var value: Int32 = on ? 1 : 0
        return setsockopt(
            socketDescriptor, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
    }
}
