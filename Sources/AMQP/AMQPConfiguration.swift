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
    /// PEM file of the certificate authorities to trust for TLS, from the URL's `cacertfile` query item.
    /// Default: `nil`, the system's bundle (`/etc/ssl/certs/ca-certificates.crt` and its equivalents).
    public var caCertificatePath: String?
    /// Seconds between heartbeats; 0 turns them off. Default: 30.
    public var heartbeat: Int = 30
    /// How long to wait for the TCP connection to open. Default: 10 seconds.
    public var connectTimeout: Duration = .seconds(10)
    /// How long a broker call (a declaration, starting or stopping a consumer, `basic.get`) waits for its answer
    /// before the connection counts as lost (``AMQPError/Code/connectionLost``), so that no thread waits for good on
    /// a broker that has stopped reading: RabbitMQ does so for a connection that publishes during a memory or disk
    /// alarm. Default: 30 seconds.
    public var rpcTimeout: Duration = .seconds(30)
    /// The name the broker shows for this connection (management UI, `rabbitmqctl list_connections`).
    public var connectionName: String = "warren"

    /// Parses `amqp://user:password@host:port/vhost` (percent-encoded; `%2F` is the vhost `/`).
    ///
    /// Defaults follow librabbitmq: `guest:guest@localhost:5672/` and port 5671 for `amqps://`.
    /// Query items as RabbitMQ's URI specification names them: `cacertfile=PATH` sets ``caCertificatePath`` and
    /// `verify=verify_peer` is what Warren does anyway (both `amqps://` only), `heartbeat` (seconds) sets
    /// ``heartbeat`` and `connection_timeout` (milliseconds) ``connectTimeout``; any other is refused.
    /// - Throws: ``AMQPError`` with code ``AMQPError/Code/invalidURL``.
    public init(url: String) throws {
        // A URL has no raw spaces or control characters, but librabbitmq would take them: C strings would end at
        // a NUL ("amqp://h\0ignored" connecting to h), a newline would split log lines, and ``redact(_:)``,
        // which stops at whitespace, could not hide a password containing one. Not echoed, for that reason.
        let isForbidden: (Unicode.Scalar) -> Bool = {
            $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
        }
        guard !url.unicodeScalars.contains(where: isForbidden) else {
            throw AMQPError(
                .invalidURL,
                "invalid broker URL: it contains spaces or control characters (percent-encode them); "
                    + "expected amqp://user:password@host:port/vhost")
        }
        var base = url
        var query: [String: String] = [:]
        if let mark = url.firstIndex(of: "?") {
            base = String(url[..<mark])
            for item in url[url.index(after: mark)...].split(separator: "&") {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let value = parts.count > 1 ? String(parts[1]) : ""
                query[String(parts[0])] = value.removingPercentEncoding ?? value
            }
        }
        let byHand = Self.partsDecodedByHand(&base)
        guard let buffer = strdup(base) else { throw AMQPError(.invalidURL, "out of memory") }
        defer { free(buffer) }
        var info = amqp_connection_info()
        amqp_default_connection_info(&info)
        guard amqp_parse_url(buffer, &info) == AMQP_STATUS_OK.rawValue else {
            throw AMQPError(
                .invalidURL,
                "invalid broker URL '\(Self.redactInvalid(url).prefix(200))': expected "
                    + "amqp://user:password@host:port/vhost (percent-encode '/', '@', ':', '?' and ',' in a user name or password: %2F, %40, %3A, %3F, %2C)"
            )
        }
        host = String(cString: info.host)
        port = Int(info.port)
        virtualHost = String(cString: info.vhost)
        user = String(cString: info.user)
        password = String(cString: info.password)
        usesTLS = info.ssl != 0
        user = byHand.user ?? user
        password = byHand.password ?? password
        virtualHost = byHand.virtualHost ?? virtualHost
        try apply(query)
    }

    /// The user name, password and virtual host of `url` that librabbitmq 0.11 would refuse though a URI allows
    /// them, decoded here: percent-escapes of bytes above 0x7F (UTF-8 text: `%C3%BC`, `ü`) and a `:` in the virtual
    /// host (`/a:b`). Each such part is decoded, and replaced in `url` by a plain placeholder for librabbitmq to
    /// parse the rest; a part with an escape that does not decode is left for librabbitmq to refuse.
    private static func partsDecodedByHand(
        _ url: inout String
    ) -> (user: String?, password: String?, virtualHost: String?) {
        guard let scheme = url.range(of: "://") else { return (nil, nil, nil) }
        let authorityEnd = url[scheme.upperBound...].firstIndex(of: "/") ?? url.endIndex
        let hasHighEscape = { (part: Substring) in
            part.split(separator: "%", omittingEmptySubsequences: false).dropFirst().contains {
                guard let first = $0.first?.hexDigitValue else { return false }
                return first >= 8
            }
        }
        var decoded: (user: String?, password: String?, virtualHost: String?) = (nil, nil, nil)
        var replacements: [(Range<String.Index>, String)] = []
        if authorityEnd < url.endIndex {
            let path = url[url.index(after: authorityEnd)...]
            if path.contains(":") || hasHighEscape(path), let text = path.removingPercentEncoding {
                decoded.virtualHost = text
                replacements.append((path.startIndex..<path.endIndex, "v"))
            }
        }
        if let at = url[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
            let userInfo = url[scheme.upperBound..<at]
            let colon = userInfo.firstIndex(of: ":")
            let user = userInfo[..<(colon ?? userInfo.endIndex)]
            if let colon {
                let password = userInfo[userInfo.index(after: colon)...]
                if hasHighEscape(password), let text = password.removingPercentEncoding {
                    decoded.password = text
                    replacements.append((password.startIndex..<password.endIndex, "p"))
                }
            }
            if hasHighEscape(user), let text = user.removingPercentEncoding {
                decoded.user = text
                replacements.append((user.startIndex..<user.endIndex, "u"))
            }
        }
        // From the end, so that the ranges before stay valid.
        for (range, placeholder) in replacements.sorted(by: { $0.0.lowerBound > $1.0.lowerBound }) {
            url.replaceSubrange(range, with: placeholder)
        }
        return decoded
    }

    /// Applies the query items of RabbitMQ's URI specification that Warren honours: `cacertfile` and
    /// `verify=verify_peer` (`amqps://` only), `heartbeat` (seconds) and `connection_timeout` (milliseconds). Any
    /// other is refused rather than ignored: a misspelt `cacertfile` would leave the CA file unused.
    private mutating func apply(_ query: [String: String]) throws {
        let shown = redactedURL
        let refuse = { (problem: String) in AMQPError(.invalidURL, "invalid broker URL '\(shown)': \(problem)") }
        // A hostile or mangled URL may carry a password into its query: only a plain name or number is echoed.
        let plain = { (text: String) in
            let isPlain =
                text.count <= 40
                && text.unicodeScalars.allSatisfy { scalar in
                    scalar.isASCII
                        && (CharacterSet.alphanumerics.contains(scalar) || "_.-".unicodeScalars.contains(scalar))
                }
            return isPlain ? text : "…"
        }
        for (item, value) in query.sorted(by: { $0.key < $1.key }) where !item.isEmpty {
            switch item {
            case "cacertfile", "verify":
                guard usesTLS else { throw refuse("\(item) is for amqps:// URLs (TLS); this one is amqp://") }
                if item == "cacertfile" {
                    caCertificatePath = value
                } else if value != "verify_peer" {
                    throw refuse(
                        "verify=\(plain(value)): Warren always verifies the broker's certificate (verify_peer)")
                }
            case "heartbeat":
                guard let seconds = Int(value), (0...65_535).contains(seconds) else {
                    throw refuse("heartbeat=\(plain(value)): expected seconds from 0 (none) to 65535")
                }
                heartbeat = seconds
            case "connection_timeout":
                guard let milliseconds = Int(value), (1...3_600_000).contains(milliseconds) else {
                    throw refuse("connection_timeout=\(plain(value)): expected milliseconds from 1 to 3600000")
                }
                connectTimeout = .milliseconds(milliseconds)
            default:
                throw refuse(
                    "unsupported query item '\(plain(item))' (Warren takes cacertfile, verify=verify_peer, "
                        + "heartbeat, connection_timeout)")
            }
        }
    }

    /// The URL with the password replaced by `***`, safe for logs and error messages.
    public var redactedURL: String {
        // Every part percent-encoded, so that the only `:` … `@` is the one around `***` whatever the user name,
        // host (an IPv6 literal keeps its colons, in brackets) or virtual host contain.
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let encode = { (part: String, allowed: CharacterSet) in
            part.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        }
        let vhost = encode(virtualHost, unreserved)
        let user = encode(user, unreserved)
        let host = host.contains(":") ? "[\(encode(host, unreserved.union([":"])))]" : encode(host, unreserved)
        return "\(usesTLS ? "amqps" : "amqp")://\(user):***@\(host):\(port)/\(vhost)"
    }

    /// `url`, which did not parse, as an error message may show it: as ``redact(_:)`` hides it, and without a scheme
    /// (`user:password@host`) everything before the last `@` hidden, since no rule says where a password would end.
    /// With a scheme but no `@`, all that follows a colon in the authority is hidden unless it is a port: the URL may
    /// be the first of a list cut at a comma inside a password (`amqp://u:Ab/x,amqp://Cd@host`).
    static func redactInvalid(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else {
            guard let at = url.lastIndex(of: "@") else { return url }
            return "***" + url[at...]
        }
        guard !url.contains("@") else { return redact(url) }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" }
        guard let colon = authority.firstIndex(of: ":"),
            !authority[authority.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber })
        else { return url }
        return url[...colon] + "***"
    }

    /// Replaces the password of any `scheme://user:password@` in `text` with `***`.
    ///
    /// For `amqp://` and `amqps://` the password is everything from the first `:` to the last `@` before the next
    /// space, or comma that starts another `amqp://` or `amqps://` URL (as ``BrokerAddresses`` splits a list), so
    /// that a password with an unencoded `/`, `@` or `,` is hidden too; for other schemes the authority ends at the
    /// first `/`. Whatever follows the last `@` of an `amqp` URL holds no `@`, so no `:password@` is left in it.
    public static func redact(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            let isAMQP = ["amqp", "amqps"].contains {
                rest[..<scheme.lowerBound].lowercased().hasSuffix($0)
            }
            result += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let authorityEnd =
                rest.indices.first { index in
                    let character = rest[index]
                    if character.isWhitespace { return true }
                    if !isAMQP { return character == "/" }
                    // A comma separates URLs in a list (BrokerAddresses), but may be part of a password or of
                    // anything else: only one that starts another URL ends this one.
                    return character == "," && startsAMQPURL(rest[rest.index(after: index)...])
                } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
                let colon = rest[..<at].firstIndex(of: ":")
            {
                result += rest[..<colon] + ":***"
                rest = rest[at...]
            }
        }
        return result + rest
    }

    /// Whether `text` starts with `amqp://` or `amqps://`, in any case, after spaces: the start of the next URL in
    /// a comma-separated list.
    public static func startsAMQPURL(_ text: Substring) -> Bool {
        let text = text.drop(while: \.isWhitespace).prefix(8).lowercased()
        return text.hasPrefix("amqp://") || text.hasPrefix("amqps://")
    }
}
