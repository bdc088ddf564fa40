extension AMQPError {
    /// Whether the broker refused a queue because the cluster node it lives on is down or out of reach: 404
    /// "home node '…' of durable queue '…' is down or inaccessible". Such a queue (a durable classic queue) is not
    /// missing: it comes back with its messages when its node does.
    public var isQueueNodeDown: Bool {
        replyCode == 404 && replyText?.contains("is down or inaccessible") == true
    }
}
