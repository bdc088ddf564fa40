import Foundation
import Warren

/// What `/livez` and `/readyz` answer: the health of the process's broker threads (a worker's, a scheduler's).
///
/// `/livez` is 200 while every thread turns, 503 once one is stalled (``HealthReport/isLive``): a probe that
/// restarts the process on it restarts a stuck one, not one waiting for its broker. `/readyz` is 200 while every
/// thread is connected and not blocked by the broker (``HealthReport/isReady``), 503 while one connects,
/// reconnects, stops or is blocked. Both bodies are the same JSON:
///
/// ```json
/// {"components":{"worker":{"broker":"amqp://guest:***@localhost:5672/%2F","connection":"connected","live":true,
///  "ready":true,"since":"2026-11-24T23:10:00.250Z"}},"live":true,"ready":true}
/// ```
///
/// Thread safety: immutable; the healths it reads are locked.
struct HealthEndpoint: Sendable {
    enum Probe {
        case live, ready
    }

    private let components: [(name: String, health: BrokerThreadHealth)]

    init(_ components: KeyValuePairs<String, BrokerThreadHealth>) {
        self.components = components.map { ($0.key, $0.value) }
    }

    /// Whether `probe` passes, and the JSON body.
    func answer(_ probe: Probe) -> (passes: Bool, body: [UInt8]) {
        let reports = components.map { ($0.name, $0.health.report()) }
        let body = Body(
            live: reports.allSatisfy(\.1.isLive), ready: reports.allSatisfy(\.1.isReady),
            components: Dictionary(reports.map { ($0, Component($1)) }, uniquingKeysWith: { first, _ in first }))
        let passes = probe == .live ? body.live : body.ready
        return (passes, Array((try? JSONEncoder.sorted.encode(body)) ?? Data()))
    }

    private struct Body: Encodable {
        let live: Bool
        let ready: Bool
        let components: [String: Component]
    }

    /// A ``HealthReport`` as JSON: absent members are left out, the overdue time in seconds.
    private struct Component: Encodable {
        let connection: String
        let broker: String?
        let since: Date
        let lastError: String?
        let blockedReason: String?
        let overdueSeconds: Double?
        let live: Bool
        let ready: Bool

        init(_ report: HealthReport) {
            connection = report.connection.rawValue
            broker = report.broker
            since = report.since
            lastError = report.lastError
            blockedReason = report.blockedReason
            overdueSeconds = report.overdue.map { $0 / .seconds(1) }
            live = report.isLive
            ready = report.isReady
        }
    }
}
