import ArgumentParser
import Logging

/// The options a flag did not give, from the environment and the settings file (``WorkerSettings``), and the
/// defaults of those that none gives.
extension WorkerOptions {
    var priorityQueues: Bool { givenPriorityQueues ?? false }
    var quorumQueues: Bool { givenQuorumQueues ?? false }
    var grace: Double { givenGrace ?? 30 }
    var logLevel: Logger.Level { givenLogLevel ?? .info }
    var logFormat: LogFormat { givenLogFormat ?? .text }

    /// Sets each option no flag gave to the value `settings` has for it, if any; returns the names of the options
    /// it set.
    /// - Throws: `ValidationError` for a value its option does not take.
    mutating func apply(_ settings: WorkerSettings) throws -> Set<String> {
        var filled: Set<String> = []
        func fill<T: ExpressibleByArgument>(_ value: inout T?, _ option: String) throws {
            guard value == nil, let found: T = try settings.value(option) else { return }
            value = found
            filled.insert(option)
        }
        func fill(_ values: inout [String], _ option: String) throws {
            guard values.isEmpty, let found = try settings.list(option) else { return }
            values = found
            filled.insert(option)
        }
        func fill(_ value: inout Bool?, _ option: String) throws {
            guard value == nil, let found = try settings.flag(option) else { return }
            value = found
            filled.insert(option)
        }
        try fill(&broker.url, "url")
        try fill(&queue, "queue")
        try fill(&width, "width")
        try fill(&localQueues, "local-queue")
        try fill(&assign, "assign")
        try fill(&rateLimits, "rate-limit")
        try fill(&fleetRateLimits, "fleet-rate-limit")
        try fill(&timeLimits, "time-limit")
        try fill(&prefetch, "prefetch")
        try fill(&givenPriorityQueues, "priority-queues")
        try fill(&givenQuorumQueues, "quorum-queues")
        try fill(&workerID, "worker-id")
        try fill(&givenGrace, "grace")
        try fill(&brokerWait.waitForBroker, "wait-for-broker")
        try fill(&maxMessageBytes, "max-message-bytes")
        try fill(&maxNestingDepth, "max-nesting-depth")
        try fill(&maxDependencies, "max-dependencies")
        try fill(&maxParkedJobs, "max-parked-jobs")
        try fill(&maxCrashes, "max-crashes")
        try fill(&maxJobs, "max-jobs")
        try fill(&maxMemory, "max-memory")
        try fill(&schedule, "schedule")
        try fill(&givenLogLevel, "log-level")
        try fill(&givenLogFormat, "log-format")
        try fill(&metrics.metricsPort, "metrics-port")
        try fill(&metrics.metricsHost, "metrics-host")
        return filled
    }
}

extension WorkerSettings {
    /// `error`, about an option, naming where its value came from when these settings gave it (`filled`):
    /// `WARREN_RATE_LIMIT in the environment: --rate-limit email: expected type=N/unit`.
    func attributing(_ error: ValidationError, to filled: Set<String>) -> ValidationError {
        let message = error.message
        // The option a message is about leads it, or follows an option it depends on: `--max-jobs 0: …`.
        let named = filled.filter { message.hasPrefix("--\($0) ") || message.hasPrefix("--\($0):") }
        guard let option = named.max(by: { $0.count < $1.count }), let found = found(option) else { return error }
        return ValidationError("\(found.source): \(message)")
    }
}
