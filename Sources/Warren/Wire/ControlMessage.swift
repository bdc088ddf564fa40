import Foundation

/// A message to every worker, published to the `warren.control` exchange and kept in the `warren.control` stream.
/// Version 1 of the format.
///
/// Kinds:
/// - `cancel`: cancel jobs wherever they are, by id (``jobIDs``) and/or every job of ``key`` whose sequence is
///   below ``beforeSequence``.
/// - `sync`: a marker a worker publishes to itself at start-up; once it reads its own ``token`` back, it has read
///   every earlier control message. Other workers ignore it.
public struct ControlMessage: Sendable, Hashable, Codable {
    public var version: Int
    /// `cancel` or `sync`.
    public var kind: String
    /// Jobs to cancel by id.
    public var jobIDs: [String]
    /// With ``beforeSequence``: cancel every job of this key whose sequence is lower.
    public var key: String?
    public var beforeSequence: UInt64?
    /// `requested` or `superseded`; copied into the `cancelled` results.
    public var reason: String
    public var sentAt: Date?
    /// For `sync`: the marker's unique token.
    public var token: String?

    enum CodingKeys: String, CodingKey {
        case version, kind, jobIDs = "jobIds", key, beforeSequence, reason, sentAt, token
    }

    init(kind: String, jobIDs: [String] = [], key: String? = nil, beforeSequence: UInt64? = nil,
         reason: String = "requested", token: String? = nil) {
        self.version = WireCoding.version
        self.kind = kind
        self.jobIDs = jobIDs
        self.key = key
        self.beforeSequence = beforeSequence
        self.reason = reason
        self.sentAt = Date()
        self.token = token
    }

    /// Cancels jobs by id.
    public static func cancel(jobIDs: [String]) -> ControlMessage {
        ControlMessage(kind: "cancel", jobIDs: jobIDs)
    }

    /// Cancels every job of `key` whose sequence is below `sequence`: a newer job supersedes them.
    public static func supersede(key: String, before sequence: UInt64) -> ControlMessage {
        ControlMessage(kind: "cancel", key: key, beforeSequence: sequence, reason: "superseded")
    }

    static func sync(token: String) -> ControlMessage {
        ControlMessage(kind: "sync", token: token)
    }

    /// The JSON body of the message.
    public func encoded() throws -> [UInt8] {
        Array(try WireCoding.encoder.encode(self))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        kind = try container.decode(String.self, forKey: .kind)
        jobIDs = try container.decodeIfPresent([String].self, forKey: .jobIDs) ?? []
        key = try container.decodeIfPresent(String.self, forKey: .key)
        beforeSequence = try container.decodeIfPresent(UInt64.self, forKey: .beforeSequence)
        reason = try container.decodeIfPresent(String.self, forKey: .reason) ?? "requested"
        sentAt = try container.decodeIfPresent(Date.self, forKey: .sentAt)
        token = try container.decodeIfPresent(String.self, forKey: .token)
    }

    /// The cancellation recorded in the results of the jobs this message cancels. Only `superseded` (with a key)
    /// and `requested` come from control messages; any other reason reads as `requested`.
    var cancellation: Cancellation {
        if reason == "superseded", let key, let beforeSequence {
            return Cancellation(
                reason: reason, message: "superseded by a newer job of key '\(key)' (sequence \(beforeSequence))")
        }
        return .requested
    }
}
