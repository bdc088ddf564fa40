#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Sending what a turn of a loop wrote in as few system calls and TCP segments as possible.
///
/// librabbitmq writes each frame with a system call of its own, and the kernel sends each publish as a segment of
/// its own. On loopback above all, both cost: the sender's kernel delivers each segment to the broker, and the
/// broker wakes to read it. Held output leaves at once instead: on a plain TCP connection, publishes and acks are
/// encoded into a ``FrameBuffer`` and sent with one `send`; on a TLS connection, where librabbitmq must encrypt
/// every write, the socket is corked (Linux `TCP_CORK`) so that they at least leave in full segments.
extension AMQPConnection {
    /// Whether output is held.
    enum OutputHold {
        /// Frames leave as they are written.
        case off
        /// Publishes and acks go to the frame buffer (plain TCP).
        case buffered
        /// Output is to be corked from the next publish on (TLS): a turn that only acks costs no extra system call.
        case requested
        /// The socket is corked (TLS).
        case corked
    }

    /// Holds publishes and acks from now on until ``flushOutput()``, which ``waitForActivity(wakeUp:timeout:)``,
    /// every request that waits for a reply, the close-ok answering a broker that closes a channel, and ``close()``
    /// call first: nothing waits for held output. (A heartbeat librabbitmq sends meanwhile may go ahead of it.)
    public func holdOutput() {
        if outputHold == .off, isOpen { outputHold = configuration.usesTLS ? .requested : .buffered }
    }

    /// How many bytes of frames are held in user space, not yet sent (always 0 on a TLS connection, which corks).
    public var heldByteCount: Int { frames.count }

    /// Sends held output now, and stops holding. A connection whose socket refuses the bytes is shut down: the
    /// next call that reads reports the connection lost, as it would after any failed write.
    public func flushOutput() {
        switch outputHold {
        case .off, .requested: break
        case .buffered: sendFrames()
        case .corked: _ = setCork(false)
        }
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

    /// Writes the frame buffer to the socket, waiting while the socket is full (the broker reads slowly, or blocks
    /// publishers under a resource alarm: librabbitmq would wait the same way).
    func sendFrames() {
        defer { frames.removeAll() }
        let bytes = frames.bytes
        var sent = 0
        while sent < bytes.count {
            let result = send(socketDescriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            if result > 0 {
                sent += result
            } else if result < 0, errno == EINTR {
                continue
            } else if result < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                var writable = pollfd(fd: socketDescriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&writable, 1, -1)
            } else {
                shutdown(socketDescriptor, Int32(SHUT_RDWR))
                return
            }
        }
    }
}
