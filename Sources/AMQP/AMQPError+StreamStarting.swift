#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension AMQPError {
    /// Whether the broker refused a stream queue because the stream is still starting: just declared (by this
    /// client or another one at the same moment) or just restarted. Trying again a moment later, on a new channel
    /// (a new connection after 541), succeeds: ``retryingWhileStreamStarts(timeout:_:)``.
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

extension AMQPError {
    /// Runs `attempt`, and runs it again while it fails because a stream is still starting (``isStreamStarting``):
    /// after 50 ms, then twice as long each time up to 1 s, for at most `timeout`. Any other failure, or the last
    /// one once `timeout` has passed, goes up.
    ///
    /// `attempt` sets up again whatever such a failure closed: the channel for 404 and 406, the connection for 541.
    public static func retryingWhileStreamStarts<T>(
        timeout: Duration = .seconds(15), _ attempt: () throws -> T
    ) throws -> T {
        let deadline = ContinuousClock.now + timeout
        var delay = Duration.milliseconds(50)
        while true {
            do {
                return try attempt()
            } catch let error as AMQPError where error.isStreamStarting && .now + delay < deadline {
                var pause = timespec(
                    tv_sec: Int(delay.components.seconds),
                    tv_nsec: Int(delay.components.attoseconds / 1_000_000_000))
                var left = timespec()
                while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
                delay = min(delay * 2, .seconds(1))
            }
        }
    }
}
