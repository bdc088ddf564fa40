import AMQP

/// An error from Warren itself: configuration, broker or wire-format problems, with a message a person can act on.
public struct WarrenError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: match on the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The worker or producer was configured in a way that cannot work.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The broker refused, closed or lost the connection.
        public static let broker = Code("broker")
        /// A queue lives on a cluster node that is down or out of reach: it is there again when the node is.
        public static let queueUnreachable = Code("queueUnreachable")
        /// A message could not be encoded or decoded.
        public static let wireFormat = Code("wireFormat")
        /// A typed job's input could not be encoded as JSON: the message names the operation type and the field.
        public static let invalidInput = Code("invalidInput")
        /// A typed job's output does not decode as its definition's `Output`: the message names the operation type
        /// and the field. The worker runs another version of the definition, or a producer not of ours wrote it.
        public static let invalidOutput = Code("invalidOutput")
        /// A recurring job's schedule (its cron expression, interval or time zone) is not valid.
        public static let invalidSchedule = Code("invalidSchedule")
        /// Waiting for something (a result, a confirm) took longer than allowed.
        public static let timeout = Code("timeout")
        /// A unique job was not enqueued: another job of its key holds the key's lock (``JobRequest/uniqueFor``).
        public static let duplicate = Code("duplicate")
        /// The operating system refused what was asked of it (running a worker's executable again).
        public static let system = Code("system")
        /// An `enqueue` stopped publishing when told to (`warren enqueue` interrupted by a signal): the jobs in `enqueuedJobIDs`
        /// are enqueued, the others of the call are not.
        public static let interrupted = Code("interrupted")
    }

    public var code: Code
    public var message: String
    /// For an `enqueue` that failed after handing jobs to the broker (`broker`, `timeout`): the ids of the jobs it
    /// handed over whose confirm did not come. They may be enqueued all the same; `cancel(jobIDs:)` takes them back.
    public var unconfirmedJobIDs: [String] = []
    /// For an `enqueue` that failed because the broker refused some of its jobs (`basic.nack`, `basic.return`), or
    /// was interrupted: the ids of the jobs the broker confirmed: they are enqueued.
    public var enqueuedJobIDs: [String] = []
    /// For a `broker` error where the broker refused what was asked (403 `ACCESS_REFUSED`: the user lacks a
    /// permission), rather than went away: trying again changes nothing until an operator does.
    public var isAccessRefused = false

    public init(_ code: Code, _ message: String, unconfirmedJobIDs: [String] = []) {
        self.code = code
        self.message = message
        self.unconfirmedJobIDs = unconfirmedJobIDs
    }

    /// A `broker` error for `error`, in its words.
    init(broker error: AMQPError) {
        self.init(.broker, error.description)
        isAccessRefused = error.replyCode == 403
    }

    public var description: String { message }

    /// Why a broker may not confirm a publish for long, as messages that gave up waiting say it.
    static let unconfirmedCauses =
        "does it block publishers, under a memory or disk alarm, or has a quorum queue or stream it writes to lost "
        + "the majority of its nodes?"
}
