import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `GET` of a health endpoint (`/livez`, `/readyz`) over plain HTTP/1.1, for `warren health`: the status and
/// the body.
///
/// SwiftNIO, as the server: no libcurl in the image for a probe.
enum HealthProbe {
    struct Answer {
        let status: HTTPResponseStatus
        let body: [UInt8]
    }

    /// Why no answer came: the endpoint and what went wrong.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Asks `host:port` for `path`, giving up after `timeout`.
    /// - Throws: ``Failure`` when nothing answers in time (nothing listens there, it answers no HTTP).
    static func get(host: String, port: Int, path: String, timeout: TimeAmount) throws -> Answer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let answer = group.next().makePromise(of: Answer.self)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(AnswerHandler(answer: answer))
                }
            }
        let given = group.next().scheduleTask(in: timeout) {
            answer.fail(Failure(description: "no answer within \(timeout.nanoseconds / 1_000_000) ms"))
        }
        defer { given.cancel() }
        do {
            let channel = try bootstrap.connect(host: host, port: port).wait()
            defer { channel.close(promise: nil) }
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: "\(host):\(port)")
            headers.add(name: "Connection", value: "close")
            let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            try channel.writeAndFlush(HTTPClientRequestPart.end(nil)).wait()
            return try answer.futureResult.wait()
        } catch {
            answer.fail(error)
            throw Failure(description: "\(url(host, port, path)): \(reason(error))")
        }
    }

    /// `http://host:port/path`, an IPv6 address in brackets.
    static func url(_ host: String, _ port: Int, _ path: String) -> String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)"
    }

    /// What went wrong, as a person reads it: the system's words for a refused connection, not NIO's types.
    private static func reason(_ error: any Error) -> String {
        if error is HTTPParserError { return "the answer is not HTTP (is that an HTTP port?)" }
        guard let error = error as? NIOConnectionError else { return "\(error)" }
        let reasons = error.connectionErrors.map { attempt in
            (attempt.error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(attempt.error)"
        }
        return "cannot connect (\(reasons.first ?? "no address"))"
    }

    /// Collects one response.
    ///
    /// Thread safety: confined to its channel's event loop, as every NIO handler.
    private final class AnswerHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart

        private let answer: EventLoopPromise<Answer>
        private var status: HTTPResponseStatus?
        private var body: [UInt8] = []

        init(answer: EventLoopPromise<Answer>) {
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                status = head.status
            case .body(let buffer):
                body += buffer.readableBytesView
            case .end:
                if let status { answer.succeed(Answer(status: status, body: body)) }
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            answer.fail(Failure(description: "the connection closed before an answer"))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            answer.fail(error)
            context.close(promise: nil)
        }
    }
}
