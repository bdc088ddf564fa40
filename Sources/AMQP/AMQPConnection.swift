internal import CRabbitMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One connection to a broker, wrapping a librabbitmq connection.
///
/// Thread safety: confined. librabbitmq connections are not thread safe, so an `AMQPConnection` is not `Sendable`:
/// the thread that opens it is the only one that may call it, until ``close()``. Heartbeats are sent and checked
/// only while that thread is inside a call, so it must call ``nextEvent()`` or ``waitForActivity(wakeUp:timeout:)``
/// at least once per heartbeat interval.
public final class AMQPConnection {
    /// The configuration this connection was opened with.
    public let configuration: AMQPConfiguration
    let state: amqp_connection_state_t
    /// Whether the connection can be used: not yet closed (``close()``).
    public private(set) var isOpen = true
    /// Whether the login is done: from then on, broker calls wait at most ``AMQPConfiguration/rpcTimeout``.
    private var loggedIn = false
    /// Whether written frames are held (``holdOutput()``).
    var outputHold = OutputHold.off
    /// Publishes and acks held while ``outputHold`` is `buffered`.
    let frames = FrameBuffer()

    /// Opens a TCP (or TLS) connection, logs in and advertises publisher confirms, consumer cancel notifications
    /// and `connection.blocked`.
    /// - Throws: ``AMQPError`` with code `connectionFailed`, `authenticationFailed` or `connectionClosed`.
    public init(configuration: AMQPConfiguration) throws {
        self.configuration = configuration
        state = amqp_new_connection()
        do {
            try open()
        } catch {
            // deinit still runs for a class whose init throws after initialising every property: free only once.
            isOpen = false
            amqp_destroy_connection(state)
            throw error
        }
    }

    /// A connection that never opens: every call throws ``AMQPError/Code/closed``. For unit tests of code that
    /// holds a connection and must not reach a broker.
    package init(unconnected configuration: AMQPConfiguration) {
        self.configuration = configuration
        state = amqp_new_connection()
        isOpen = false
        amqp_destroy_connection(state)
    }

    deinit {
        close()
    }

    private func open() throws {
        let address = "\(configuration.host):\(configuration.port)"
        let socket: OpaquePointer?
        if configuration.usesTLS {
            socket = amqp_ssl_socket_new(state)
            guard let socket else { throw AMQPError(.tlsFailed, "cannot create a TLS socket") }
            // librabbitmq trusts no certificate authority by default: without cacertfile, use the system's.
            let caPath = configuration.caCertificatePath ?? Self.systemCACertificates
            if let caPath, amqp_ssl_socket_set_cacert(socket, caPath) != 0 {
                throw AMQPError(.tlsFailed, "cannot read CA certificate file '\(caPath)' (cacertfile)")
            }
            amqp_ssl_socket_set_verify_peer(socket, 1)
            amqp_ssl_socket_set_verify_hostname(socket, 1)
        } else {
            socket = amqp_tcp_socket_new(state)
        }
        guard let socket else { throw AMQPError(.connectionFailed, "cannot create a socket") }
        let timeout = configuration.connectTimeout.components
        var tv = timeval(tv_sec: Int(timeout.seconds), tv_usec: Int(timeout.attoseconds / 1_000_000_000_000))
        let status = amqp_socket_open_noblock(socket, configuration.host, Int32(configuration.port), &tv)
        guard status == AMQP_STATUS_OK.rawValue else {
            let reason =
                switch status {
                case AMQP_STATUS_TIMEOUT.rawValue: "no answer within \(configuration.connectTimeout)"
                case AMQP_STATUS_HOSTNAME_RESOLUTION_FAILED.rawValue: "unknown host name"
                case AMQP_STATUS_SOCKET_ERROR.rawValue: "connection refused or host unreachable"
                case AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED.rawValue:
                    "TLS: the broker's certificate is not for host '\(configuration.host)'"
                case AMQP_STATUS_SSL_PEER_VERIFY_FAILED.rawValue:
                    "TLS: the broker's certificate is not signed by a trusted CA (cacertfile)"
                case AMQP_STATUS_SSL_CONNECTION_FAILED.rawValue, AMQP_STATUS_SSL_ERROR.rawValue:
                    "TLS handshake failed: the broker's certificate is not signed by a trusted CA (cacertfile) "
                        + "or not for host '\(configuration.host)', or the port does not speak TLS"
                default: Self.statusText(status)
                }
            let tlsFailures = [
                AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED, AMQP_STATUS_SSL_PEER_VERIFY_FAILED,
                AMQP_STATUS_SSL_CONNECTION_FAILED, AMQP_STATUS_SSL_ERROR,
            ]
            if tlsFailures.contains(where: { $0.rawValue == status }) {
                throw AMQPError(.tlsFailed, "cannot connect to \(address): \(reason)")
            }
            throw AMQPError(.connectionFailed, "cannot connect to \(address): \(reason); is a broker listening there?")
        }
        let arena = CArena()
        let capabilities: AMQPTable = [
            "publisher_confirms": true, "consumer_cancel_notify": true, "connection.blocked": true,
            "basic.nack": true, "authentication_failure_close": true,
        ]
        var properties = arena.table([
            "product": "warren", "connection_name": .string(configuration.connectionName),
            "capabilities": .table(capabilities),
        ])
        let reply = warren_login_plain(
            state, configuration.virtualHost, 0, 131_072, Int32(configuration.heartbeat), &properties,
            configuration.user, configuration.password)
        if reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION,
            reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD,
            let close = reply.reply.decoded?.assumingMemoryBound(to: amqp_connection_close_t.self).pointee,
            close.reply_code == 403 || close.reply_code == 530
        {
            let text = CDecode.string(close.reply_text)
            if close.reply_code == 530, text.contains("connection limit") {
                // The user's or the virtual host's connection limit: trying again may do, once another closes.
                throw AMQPError(
                    .connectionFailed,
                    "cannot connect to \(address) as user '\(configuration.user)': a connection limit is reached",
                    replyCode: close.reply_code, replyText: text)
            }
            let problem =
                close.reply_code == 530
                ? "virtual host '\(configuration.virtualHost)' does not exist or is not open to this user"
                : "wrong user name or password"
            // The broker's words after NOT_ALLOWED name the virtual host and why; after ACCESS_REFUSED they only
            // point to its log.
            throw AMQPError(
                .authenticationFailed, "broker at \(address) refused user '\(configuration.user)': \(problem)",
                replyCode: close.reply_code, replyText: close.reply_code == 530 ? text : Self.shortReplyText(text))
        }
        // RabbitMQ refuses credentials with a connection.close (403), since this client asks for it
        // (authentication_failure_close): a connection closed without one never got that far (a proxy in front of
        // a broker not up yet accepts and closes, as does a broker still starting), and trying again may do.
        if reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION,
            [AMQP_STATUS_CONNECTION_CLOSED, AMQP_STATUS_SOCKET_CLOSED, AMQP_STATUS_SOCKET_ERROR]
                .contains(where: { $0.rawValue == reply.library_error })
        {
            throw AMQPError(
                .connectionFailed,
                "cannot connect to \(address): the connection closed before the broker let this client log in "
                    + "(is a broker starting there, or behind a proxy?"
                    + (configuration.usesTLS ? ")" : " Or is it a TLS port, for amqps://?)"))
        }
        try check(reply, "log in to \(address)")
        let limit = configuration.rpcTimeout.components
        var rpcLimit = timeval(tv_sec: Int(limit.seconds), tv_usec: Int(limit.attoseconds / 1_000_000_000_000))
        _ = amqp_set_rpc_timeout(state, &rpcLimit)
        loggedIn = true
    }

    /// The system's bundle of trusted certificate authorities (Debian, Fedora, Alpine), if there is one.
    static let systemCACertificates: String? = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
    ].first { access($0, R_OK) == 0 }

    /// Closes the connection politely (`connection.close`) and frees it, waiting at most 2 s for the broker's
    /// answer (a broker that stopped reading, under a memory or disk alarm, never sends one). Safe to call twice.
    public func close() {
        guard isOpen else { return }
        flushOutput()
        isOpen = false
        var limit = timeval(tv_sec: 2, tv_usec: 0)
        _ = amqp_set_rpc_timeout(state, &limit)
        _ = amqp_connection_close(state, AMQP_REPLY_SUCCESS)
        amqp_destroy_connection(state)
    }

    /// The socket's file descriptor, for `poll`.
    public var socketDescriptor: Int32 {
        isOpen ? amqp_get_sockfd(state) : -1
    }

    /// What the broker said about itself when the connection opened (`connection.start`): `product`, `version`,
    /// `cluster_name` (the same on every node of a cluster), …
    public var serverProperties: AMQPTable {
        guard isOpen, let properties = amqp_get_server_properties(state) else { return [:] }
        return CDecode.table(properties.pointee)
    }

    /// Whether librabbitmq already holds frames or bytes that ``nextEvent()`` can return without reading the socket.
    public var hasBufferedInput: Bool {
        isOpen && (amqp_frames_enqueued(state) != 0 || amqp_data_in_buffer(state) != 0)
    }

    // MARK: - Errors

    /// Throws unless the connection is open: after ``close()`` librabbitmq's state is freed.
    func checkOpen(_ action: @autoclosure () -> String) throws {
        guard !isOpen else { return }
        throw AMQPError(.closed, "cannot \(action()): the connection was closed (close() was called)")
    }

    /// Maps an RPC reply to an error; the one place where librabbitmq replies become ``AMQPError``.
    func check(_ reply: amqp_rpc_reply_t, _ action: @autoclosure () -> String, channel: UInt16 = 0) throws {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            throw serverError(reply.reply, action: action(), channel: channel)
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw libraryError(reply.library_error, action: action())
        default:
            throw AMQPError(.library, "cannot \(action()): no reply from librabbitmq")
        }
    }

    /// Turns a `channel.close` or `connection.close` from the broker into an error, answering it with close-ok.
    func serverError(_ method: amqp_method_t, action: String, channel: UInt16) -> AMQPError {
        switch method.id {
        case AMQP_CHANNEL_CLOSE_METHOD:
            let close = method.decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            acknowledgeChannelClose(channel)
            return AMQPError(
                .channelClosed, "cannot \(action): the broker closed channel \(channel)", replyCode: close.reply_code,
                replyText: CDecode.string(close.reply_text), channel: channel)
        case AMQP_CONNECTION_CLOSE_METHOD:
            let close = method.decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            var ok = amqp_connection_close_ok_t(dummy: 0)
            flushOutput()
            _ = amqp_send_method(state, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok)
            return AMQPError(
                .connectionClosed, "cannot \(action): the broker closed the connection",
                replyCode: close.reply_code, replyText: CDecode.string(close.reply_text))
        default:
            return AMQPError(.library, "cannot \(action): unexpected method \(method.id) from the broker")
        }
    }

    func libraryError(_ status: Int32, action: String) -> AMQPError {
        // A broker call past its time limit (the only timeout a library error reports): the answer may still come,
        // and would be taken for the next call's, so the connection is done for.
        if status == AMQP_STATUS_TIMEOUT.rawValue {
            return AMQPError(
                .connectionLost,
                loggedIn
                    ? "cannot \(action): no answer from the broker within \(configuration.rpcTimeout) (does it block "
                        + "this connection, under a memory or disk alarm, or has its cluster lost the majority of its "
                        + "nodes, which streams and quorum queues need?)"
                    : "cannot \(action): no answer from the broker in time (is it an AMQP broker, and does it run?)")
        }
        let lost = [
            AMQP_STATUS_CONNECTION_CLOSED, AMQP_STATUS_SOCKET_ERROR, AMQP_STATUS_SOCKET_CLOSED,
            AMQP_STATUS_HEARTBEAT_TIMEOUT, AMQP_STATUS_SSL_ERROR, AMQP_STATUS_TCP_ERROR,
        ]
        let code: AMQPError.Code = lost.contains(where: { $0.rawValue == status }) ? .connectionLost : .library
        return AMQPError(code, "cannot \(action): \(Self.statusText(status))")
    }

    /// The reply code's name, without the broker's advice that follows it ("ACCESS_REFUSED - Login was …").
    static func shortReplyText(_ text: String) -> String {
        text.split(separator: " ", maxSplits: 1).first.map(String.init) ?? text
    }

    static func statusText(_ status: Int32) -> String {
        String(cString: amqp_error_string2(status))
    }

    /// Checks the int status librabbitmq returns for methods that have no reply (publish, ack).
    func check(status: Int32, _ action: @autoclosure () -> String) throws {
        guard status != AMQP_STATUS_OK.rawValue else { return }
        throw libraryError(status, action: action())
    }

    /// Sends channel.close-ok after the broker closed `channel` asynchronously.
    func acknowledgeChannelClose(_ channel: UInt16) {
        // After what was written on the channel before the broker closed it, as on the wire.
        flushOutput()
        var ok = amqp_channel_close_ok_t(dummy: 0)
        _ = amqp_send_method(state, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok)
    }
}
