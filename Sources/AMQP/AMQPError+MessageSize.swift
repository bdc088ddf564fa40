extension AMQPError {
    /// The largest message body the broker takes, when it closed a channel for a larger one: 406 "message size
    /// 1048759 is larger than configured max size 1048576" (RabbitMQ's `max_message_size`; 128 MiB by default).
    public var brokerMaxMessageSize: Int? {
        guard replyCode == 406, let text = replyText, let range = text.range(of: "larger than configured max size ")
        else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }
}
