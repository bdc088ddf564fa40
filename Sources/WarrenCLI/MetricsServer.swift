import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import Synchronization
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The Prometheus and health endpoint of a worker or scheduler (`--metrics-port`): `GET /metrics` answers with the
/// exposition text of the registry behind swift-metrics in this process, `GET /livez` and `GET /readyz` with the
/// health of its broker threads (``HealthEndpoint``); `HEAD` with their headers; another method on those paths is
/// 405, anything else 404.
///
/// SwiftNIO serves it, on one event loop thread the server owns: unlike an HTTP stack built on Foundation's
/// networking, NIO does not bring libcurl and its TLS and Kerberos libraries into every process.
///
/// Thread safety: immutable; the listening channel and its connections live on the server's event loop, and the
/// registry is locked.
final class MetricsServer: Sendable {
    /// The port it listens on: the one asked for, or the one the system picked for port 0.
    let port: UInt16
    let host: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    /// How long a connection may stay idle before the server closes it: longer than any scrape interval, so a
    /// scraper's kept-alive connection survives, but abandoned connections do not pile up.
    static let idleTimeout = TimeAmount.minutes(5)

    /// How long a request may take to arrive whole, from its first byte: a scraper sends its request at once, so a
    /// client sending a byte now and then cannot hold a connection (one of ``maxConnections``) for longer.
    static let requestTimeout = TimeAmount.seconds(10)

    /// The most connections served at once; one more is closed as it opens, so that clients holding connections
    /// open (the endpoint may listen on every interface) cannot take the process's file descriptors and memory.
    static let maxConnections = 256

    private init(host: String, port: UInt16, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.host = host
        self.port = port
        self.group = group
        self.channel = channel
    }

    /// Bootstraps swift-metrics with Prometheus (once per process), listens on `host:port`, and logs
    /// "metrics endpoint listening" with the bound port. Returns once it listens.
    /// - Throws: ``WarrenError``: `invalidConfiguration` for a host that is no IPv4 address, `system` when it cannot
    ///   listen there (a port in use).
    static func start(host: String, port: UInt16, health: HealthEndpoint, logger: Logger) throws -> MetricsServer {
        let registry = MetricsSetup.bootstrap()
        var ip4 = in_addr()
        guard inet_pton(AF_INET, host, &ip4) == 1, let address = try? SocketAddress(ipAddress: host, port: Int(port))
        else {
            throw WarrenError(.invalidConfiguration, "--metrics-host \(host): not an IPv4 address")
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [connections = ConnectionCount()] channel in
                guard connections.admit() else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                channel.closeFuture.whenComplete { _ in connections.release() }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(allTimeout: idleTimeout))
                    try pipeline.addHandler(RequestDeadline())
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(MetricsHandler(registry: registry, health: health))
                }
            }
        let channel: any Channel
        let bound: Int
        do {
            channel = try bootstrap.bind(to: address).wait()
            guard let port = channel.localAddress?.port else {
                throw WarrenError(.invalidConfiguration, "the metrics endpoint has no IPv4 address")
            }
            bound = port
        } catch {
            try? group.syncShutdownGracefully()
            // A port in use is a runtime condition (exit 1), not a bad argument.
            let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            throw WarrenError(.system, "cannot serve metrics on \(host):\(port): \(reason)")
        }
        // A port picked by the system is only known from this line: it is logged at the logger's level up to
        // warning (not as an error, which alerts watch for).
        logger.log(
            level: port == 0 ? min(max(.info, logger.logLevel), .warning) : .info, "metrics endpoint listening",
            metadata: ["host": "\(host)", "port": "\(bound)"])
        return MetricsServer(host: host, port: UInt16(bound), group: group, channel: channel)
    }

    /// Stops listening, closes the connections and ends the server's thread.
    func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}

/// Answers one connection's requests, in order (NIO's pipeline handler holds back pipelined requests until the
/// answer before them is written).
///
/// Thread safety: confined to its channel's event loop, as every NIO handler.
private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private let health: HealthEndpoint
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry, health: HealthEndpoint) {
        self.registry = registry
        self.health = health
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// A request that does not parse was answered 400 by NIO's error handler; nothing sensible can follow it.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.prefix { $0 != "?" }
        var headers = HTTPHeaders()
        let status: HTTPResponseStatus
        var body = context.channel.allocator.buffer(capacity: 0)
        let probes: [Substring: HealthEndpoint.Probe] = ["/livez": .live, "/readyz": .ready]
        if head.method != .GET && head.method != .HEAD {
            // Its paths take only GET and HEAD; others are not there.
            let known = path == "/metrics" || probes[path] != nil
            status = known ? .methodNotAllowed : .notFound
            if known { headers.add(name: "Allow", value: "GET, HEAD") }
        } else if path == "/metrics" {
            WorkerMetrics.sampleLocalQueues()
            WorkerMetrics.sampleProcess()
            var text: [UInt8] = []
            registry.emit(into: &text)
            body.writeBytes(text)
            status = .ok
            headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        } else if let probe = probes[path] {
            let (passes, json) = health.answer(probe)
            body.writeBytes(json)
            status = passes ? .ok : .serviceUnavailable
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Cache-Control", value: "no-store")
        } else {
            status = .notFound
        }
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        if head.method == .HEAD { body.clear() }
        let keepAlive = head.isKeepAlive
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let response = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// Closes a connection whose request has not arrived whole ``MetricsServer/requestTimeout`` after its first byte.
/// It sits next to the socket, below NIO's HTTP decoder: the first bytes read while no request is pending start the
/// clock, and the answer, the first bytes written after them, stops it.
///
/// Thread safety: confined to its channel's event loop, as every NIO handler.
private final class RequestDeadline: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var deadline: Scheduled<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if deadline == nil {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: MetricsServer.requestTimeout) { channel.close(promise: nil) }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        stop()
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    private func stop() {
        deadline?.cancel()
        deadline = nil
    }
}

/// How many connections a ``MetricsServer`` serves now, to keep them at most ``MetricsServer/maxConnections``.
///
/// Thread safety: atomic.
private final class ConnectionCount: Sendable {
    private let open = Atomic(0)

    /// Counts one more connection; `false`, counting none, when there are as many as allowed.
    func admit() -> Bool {
        let (_, count) = open.add(1, ordering: .relaxed)
        guard count > MetricsServer.maxConnections else { return true }
        open.subtract(1, ordering: .relaxed)
        return false
    }

    func release() {
        open.subtract(1, ordering: .relaxed)
    }
}
