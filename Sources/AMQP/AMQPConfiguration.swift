internal import CRabbitMQ
import Foundation

/// How to reach and log in to a broker, parsed from an `amqp://` or `amqps://` URL.
public struct AMQPConfiguration: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var virtualHost: String
    public var user: String
    public var password: String
    /// `true` for `amqps://`: TLS, verifying the broker's certificate.
    public var usesTLS: Bool
    /// PEM file of the certificate authorities to trust for TLS. Default: `nil`, the URL's `cacertfile` query item.
    public var caCertificatePath: String?
    /// Seconds between heartbeats; 0 turns them off. Default: 30.
    public var heartbeat: Int = 30
    /// How long to wait for the TCP connection to open. Default: 10 seconds.
    public var connectTimeout: Duration = .seconds(10)
    /// The name the broker shows for this connection (management UI, `rabbitmqctl list_connections`).
    public var connectionName: String = "warren"

    /// Parses `amqp://user:password@host:port/vhost` (percent-encoded; `%2F` is the vhost `/`).
    ///
    /// Defaults follow librabbitmq: `guest:guest@localhost:5672/` and port 5671 for `amqps://`.
    /// A `cacertfile=PATH` query item sets ``caCertificatePath``.
    /// - Throws: ``AMQPError`` with code ``AMQPError/Code/invalidURL``.
    public init(url: String) throws {
        var base = url
        var query: [String: String] = [:]
        if let mark = url.firstIndex(of: "?") {
            base = String(url[..<mark])
            for item in url[url.index(after: mark)...].split(separator: "&") {
                let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                query[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
        }
        guard let buffer = strdup(base) else { throw AMQPError(.invalidURL, "out of memory") }
        defer { free(buffer) }
        var info = amqp_connection_info()
        amqp_default_connection_info(&info)
        guard amqp_parse_url(buffer, &info) == AMQP_STATUS_OK.rawValue else {
            throw AMQPError(
                .invalidURL,
                "invalid broker URL '\(Self.redact(url))': expected amqp://user:password@host:port/vhost")
        }
        host = String(cString: info.host)
        port = Int(info.port)
        virtualHost = String(cString: info.vhost)
        user = String(cString: info.user)
        password = String(cString: info.password)
        usesTLS = info.ssl != 0
        caCertificatePath = query["cacertfile"]
    }

    /// The URL with the password replaced by `***`, safe for logs and error messages.
    public var redactedURL: String {
        let vhost = virtualHost == "/" ? "%2F" : virtualHost
        return "\(usesTLS ? "amqps" : "amqp")://\(user):***@\(host):\(port)/\(vhost)"
    }

    /// Replaces the password of any `scheme://user:password@` in `text` with `***`.
    public static func redact(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            result += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == " " }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
                let colon = rest[..<at].firstIndex(of: ":")
            {
                result += rest[..<colon] + ":***"
                rest = rest[at...]
            }
        }
        return result + rest
    }
}
