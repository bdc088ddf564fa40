import Foundation

/// What the schedulers of a broker have done: for each schedule, the instant up to which its ticks were dealt with
/// (their jobs enqueued, or skipped as too late). It travels as the message a leading ``Scheduler`` holds in the
/// `warren.schedules` queue (wire format, *Schedules*):
///
/// ```json
/// {"version": 1, "schedules": {"nightly-report": {"through": "2026-11-24T02:00:00Z"}}}
/// ```
///
/// Thread safety: immutable (a value).
struct ScheduleState: Equatable, Sendable {
    static let version = 1
    /// The `type` property of its messages.
    static let messageType = "warren.schedule-state"

    /// Per schedule name: every tick at or before this instant was dealt with.
    var through: [String: Date] = [:]

    /// Both states' news: for each schedule, the later of the two instants.
    func merged(with other: ScheduleState) -> ScheduleState {
        ScheduleState(through: through.merging(other.through) { max($0, $1) })
    }

    private struct Message: Codable {
        struct Entry: Codable { var through: Date }
        var version: Int
        var schedules: [String: Entry]
    }

    func encoded() throws -> [UInt8] {
        let message = Message(version: Self.version, schedules: through.mapValues { Message.Entry(through: $0) })
        return Array(try WireCoding.encoder.encode(message))
    }

    /// - Throws: ``WarrenError`` (`wireFormat`) for a body that is not a state message of a version this build reads.
    static func decode(_ body: [UInt8]) throws -> ScheduleState {
        let message: Message
        do {
            message = try WireCoding.decoder.decode(Message.self, from: Data(body))
        } catch {
            throw WarrenError(.wireFormat, "not a schedule state message (\(body.count) bytes): \(error)")
        }
        guard message.version == version else {
            throw WarrenError(
                .wireFormat, "schedule state message of version \(message.version); this build reads \(version)")
        }
        return ScheduleState(through: message.schedules.mapValues(\.through))
    }
}
