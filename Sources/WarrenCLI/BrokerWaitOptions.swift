import ArgumentParser
import Foundation

/// `--wait-for-broker`, of the long-running commands (`worker`, `schedule`): how long to keep trying, at start, while
/// no broker listens.
///
/// Thread safety: immutable once parsed.
struct BrokerWaitOptions: ParsableArguments {
    @Option(
        name: .customLong("wait-for-broker"),
        help: ArgumentHelp(
            "At start, how long to keep trying while no broker listens; a refused password fails at once "
                + "(default: 60s).",
            valueName: "seconds|30s|5m"))
    var waitForBroker: TimeSpan?

    /// The wait when none is given: a minute.
    static let defaultWait = TimeSpan(seconds: 60)

    /// The longest wait: a day.
    static let longest: TimeInterval = 86_400

    func validate() throws {
        guard (waitForBroker ?? Self.defaultWait).seconds <= Self.longest else {
            throw ValidationError("--wait-for-broker: expected 0 to a day (86400 s, 1d)")
        }
    }

    /// The wait, to the millisecond.
    var duration: Duration { (waitForBroker ?? Self.defaultWait).duration }
}
