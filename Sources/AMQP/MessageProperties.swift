internal import CRabbitMQ

/// The AMQP `basic` properties of a message. Every field is optional, as on the wire.
public struct MessageProperties: Sendable, Hashable {
    public var contentType: String?
    public var contentEncoding: String?
    public var headers: AMQPTable?
    /// `true` for delivery mode 2 (persistent), `false` for 1 (transient).
    public var persistent: Bool?
    /// 0...255; queues declared with `x-max-priority` order by it.
    public var priority: UInt8?
    public var correlationID: String?
    public var replyTo: String?
    /// Per-message TTL in milliseconds, as a decimal string.
    public var expiration: String?
    public var messageID: String?
    /// Seconds since 1970.
    public var timestamp: UInt64?
    public var type: String?
    public var userID: String?
    public var appID: String?

    public init(
        contentType: String? = nil, contentEncoding: String? = nil, headers: AMQPTable? = nil,
        persistent: Bool? = nil, priority: UInt8? = nil, correlationID: String? = nil, replyTo: String? = nil,
        expiration: String? = nil, messageID: String? = nil, timestamp: UInt64? = nil, type: String? = nil,
        userID: String? = nil, appID: String? = nil
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.headers = headers
        self.persistent = persistent
        self.priority = priority
        self.correlationID = correlationID
        self.replyTo = replyTo
        self.expiration = expiration
        self.messageID = messageID
        self.timestamp = timestamp
        self.type = type
        self.userID = userID
        self.appID = appID
    }
}

extension MessageProperties {
    init(_ c: amqp_basic_properties_t) {
        let flags = c._flags
        func has(_ flag: Int32) -> Bool { flags & amqp_flags_t(flag) != 0 }
        self.init()
        if has(AMQP_BASIC_CONTENT_TYPE_FLAG) { contentType = CDecode.string(c.content_type) }
        if has(AMQP_BASIC_CONTENT_ENCODING_FLAG) { contentEncoding = CDecode.string(c.content_encoding) }
        if has(AMQP_BASIC_HEADERS_FLAG) { headers = CDecode.table(c.headers) }
        if has(AMQP_BASIC_DELIVERY_MODE_FLAG) { persistent = c.delivery_mode == 2 }
        if has(AMQP_BASIC_PRIORITY_FLAG) { priority = c.priority }
        if has(AMQP_BASIC_CORRELATION_ID_FLAG) { correlationID = CDecode.string(c.correlation_id) }
        if has(AMQP_BASIC_REPLY_TO_FLAG) { replyTo = CDecode.string(c.reply_to) }
        if has(AMQP_BASIC_EXPIRATION_FLAG) { expiration = CDecode.string(c.expiration) }
        if has(AMQP_BASIC_MESSAGE_ID_FLAG) { messageID = CDecode.string(c.message_id) }
        if has(AMQP_BASIC_TIMESTAMP_FLAG) { timestamp = c.timestamp }
        if has(AMQP_BASIC_TYPE_FLAG) { type = CDecode.string(c.type) }
        if has(AMQP_BASIC_USER_ID_FLAG) { userID = CDecode.string(c.user_id) }
        if has(AMQP_BASIC_APP_ID_FLAG) { appID = CDecode.string(c.app_id) }
    }

    func encoded(in arena: CArena) -> amqp_basic_properties_t {
        var c = amqp_basic_properties_t()
        var flags: Int32 = 0
        if let contentType {
            c.content_type = arena.bytes(contentType)
            flags |= AMQP_BASIC_CONTENT_TYPE_FLAG
        }
        if let contentEncoding {
            c.content_encoding = arena.bytes(contentEncoding)
            flags |= AMQP_BASIC_CONTENT_ENCODING_FLAG
        }
        if let headers {
            c.headers = arena.table(headers)
            flags |= AMQP_BASIC_HEADERS_FLAG
        }
        if let persistent {
            c.delivery_mode = persistent ? 2 : 1
            flags |= AMQP_BASIC_DELIVERY_MODE_FLAG
        }
        if let priority {
            c.priority = priority
            flags |= AMQP_BASIC_PRIORITY_FLAG
        }
        if let correlationID {
            c.correlation_id = arena.bytes(correlationID)
            flags |= AMQP_BASIC_CORRELATION_ID_FLAG
        }
        if let replyTo {
            c.reply_to = arena.bytes(replyTo)
            flags |= AMQP_BASIC_REPLY_TO_FLAG
        }
        if let expiration {
            c.expiration = arena.bytes(expiration)
            flags |= AMQP_BASIC_EXPIRATION_FLAG
        }
        if let messageID {
            c.message_id = arena.bytes(messageID)
            flags |= AMQP_BASIC_MESSAGE_ID_FLAG
        }
        if let timestamp {
            c.timestamp = timestamp
            flags |= AMQP_BASIC_TIMESTAMP_FLAG
        }
        if let type {
            c.type = arena.bytes(type)
            flags |= AMQP_BASIC_TYPE_FLAG
        }
        if let userID {
            c.user_id = arena.bytes(userID)
            flags |= AMQP_BASIC_USER_ID_FLAG
        }
        if let appID {
            c.app_id = arena.bytes(appID)
            flags |= AMQP_BASIC_APP_ID_FLAG
        }
        c._flags = amqp_flags_t(flags)
        return c
    }
}
