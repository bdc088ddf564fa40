extension AMQPError {
    /// Whether the broker refused a stream queue because the stream is still starting: just declared (by this
    /// client or another one at the same moment) or just restarted. Trying again on a new connection, a moment
    /// later, succeeds.
    ///
    /// RabbitMQ 3.10 answers a consumer that reaches a stream before its local member runs with 406 "does not have
    /// a replica on the local node", 404 "… is down or inaccessible", or by closing the connection with
    /// 541 `INTERNAL_ERROR`.
    public var isStreamStarting: Bool {
        switch replyCode {
        case 541: true
        case 406: replyText?.contains("does not have a replica on the local node") == true
        case 404: replyText?.contains("is down or inaccessible") == true
        default: false
        }
    }
}
