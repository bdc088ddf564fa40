/// An error from the AMQP connection: a library failure, or a channel or connection closed by the broker.
///
/// When the broker closed something, ``replyCode`` and ``replyText`` carry what it said
/// (for example 404 `NOT_FOUND`, 403 `ACCESS_REFUSED`, 406 `PRECONDITION_FAILED`).
public struct AMQPError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The URL could not be parsed.
        public static let invalidURL = Code("invalidURL")
        /// The TCP connection could not be opened: nothing listens there (yet), the host is unreachable or its name
        /// unknown, or no answer came in time; or the broker refused it for a user's or a virtual host's connection
        /// limit. Trying again later may succeed.
        public static let connectionFailed = Code("connectionFailed")
        /// TLS could not be set up: the broker's certificate is not trusted or not for the host, the handshake
        /// failed, or the CA certificate file cannot be read. Trying again changes nothing.
        public static let tlsFailed = Code("tlsFailed")
        /// The broker refused the credentials.
        public static let authenticationFailed = Code("authenticationFailed")
        /// The broker closed the connection (``AMQPError/replyCode`` says why).
        public static let connectionClosed = Code("connectionClosed")
        /// The broker closed a channel (``AMQPError/replyCode`` says why).
        public static let channelClosed = Code("channelClosed")
        /// The socket failed or the peer stopped answering heartbeats.
        public static let connectionLost = Code("connectionLost")
        /// The connection was closed by this client (``AMQPConnection/close()``): nothing more can be done on it.
        public static let closed = Code("closed")
        /// librabbitmq reported an error that is none of the above.
        public static let library = Code("library")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// The broker's reply code, when the broker closed a channel or the connection.
    public var replyCode: UInt16?
    /// The broker's reply text, when the broker closed a channel or the connection.
    public var replyText: String?
    /// The channel the broker closed, for ``Code/channelClosed``.
    public var channel: UInt16?

    public init(
        _ code: Code, _ message: String, replyCode: UInt16? = nil, replyText: String? = nil, channel: UInt16? = nil
    ) {
        self.code = code
        self.message = message
        self.replyCode = replyCode
        self.replyText = replyText.map(Self.oneLine)
        self.channel = channel
    }

    /// The broker's reply text on one line, at most 500 characters: an internal error quotes an Erlang term over
    /// several indented lines, and an error is one line on stderr.
    static func oneLine(_ text: String) -> String {
        let words = text.split(whereSeparator: { $0.isWhitespace || $0.isNewline })
        let line = words.joined(separator: " ")
        return line.count > 500 ? line.prefix(499) + "…" : line
    }

    public var description: String {
        if let replyCode, let replyText {
            return "\(message) (broker replied \(replyCode) \(replyText))"
        }
        return message
    }
}
