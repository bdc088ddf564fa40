import ArgumentParser
import Dispatch
import Foundation
import Logging
import Metrics
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The options of `warren worker`, for reuse by executables that register their own operation types:
///
/// ```swift
/// @main struct MyWorker: ParsableCommand {
///     @OptionGroup var options: WorkerOptions
///     func run() throws {
///         var registry = OperationRegistry()
///         registry.register(Thumbnail.self, on: "cpu", blocking: makeThumbnail)
///         try options.run(registry: registry)
///     }
/// }
/// ```
///
/// Every option can also come from the environment or from a settings file, `--config` or `$WARREN_CONFIG`:
/// `--width 8` is `WARREN_WIDTH=8`. A flag beats the environment, which beats the file.
public struct WorkerOptions: ParsableArguments {
    @OptionGroup public var broker: BrokerOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A file of settings, WARREN_NAME=value a line, below the environment and the flags "
                + "(default: $WARREN_CONFIG).",
            valueName: "file"))
    var config: String?

    @Option(name: .long, help: "Broker queue to consume; repeat for several (default: warren.default).")
    var queue: [String] = []

    @Option(name: .long, help: "Width of the default local queue (default: the number of cores).")
    var width: Int?

    @Option(
        name: .customLong("local-queue"),
        help: ArgumentHelp("Another local queue and its width; repeat for several.", valueName: "name=width"))
    var localQueues: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Run an operation type on a local queue; repeat for several.", valueName: "type=queue"))
    var assign: [String] = []

    @Option(
        name: .customLong("rate-limit"),
        help: ArgumentHelp(
            "Start at most N jobs of an operation type per second, minute, hour or day on this worker, evenly spaced; "
                + "repeat for several types.", valueName: "type=N/s|m|h|d"))
    var rateLimits: [String] = []

    @Option(
        name: .customLong("fleet-rate-limit"),
        help: ArgumentHelp(
            "Start at most N jobs of an operation type per second, minute, hour or day across every worker of the "
                + "broker with this limit, evenly spaced up to 20/s; repeat for several types.",
            valueName: "type=N/s|m|h|d"))
    var fleetRateLimits: [String] = []

    @Option(
        name: .customLong("time-limit"),
        help: ArgumentHelp(
            "Cancel a job of an operation type whose code runs longer, and end it failed (timeLimit); repeat for "
                + "several types.", valueName: "type=seconds|250ms|30s|10m|2h|1d"))
    var timeLimits: [String] = []

    @Option(name: .long, help: "Most jobs held unacknowledged at once (default: the total local queue width).")
    var prefetch: Int?

    @Flag(
        name: .customLong("priority-queues"), inversion: .prefixedNo,
        help: "Create missing broker queues as priority queues, which deliver waiting jobs highest priority first.")
    var givenPriorityQueues: Bool?

    @Flag(
        name: .customLong("quorum-queues"), inversion: .prefixedNo,
        help: "Create missing broker queues as quorum queues, replicated on the nodes of a cluster (no priorities).")
    var givenQuorumQueues: Bool?

    @Option(name: .customLong("worker-id"), help: "Name in results and logs (default: host-pid).")
    var workerID: String?

    @Option(
        name: .customLong("grace"),
        help: ArgumentHelp(
            "Seconds executing jobs get to finish on SIGTERM, SIGINT or SIGHUP before they are cancelled "
                + "(default: 30)."))
    var givenGrace: Double?

    @OptionGroup var brokerWait: BrokerWaitOptions

    @Option(
        name: .customLong("max-message-bytes"),
        help: "Larger job messages are dead-lettered unread (default: 1048576).")
    var maxMessageBytes: Int?

    @Option(
        name: .customLong("max-nesting-depth"),
        help: "Job messages nesting arrays and objects deeper are dead-lettered unread (default: 64).")
    var maxNestingDepth: Int?

    @Option(
        name: .customLong("max-dependencies"),
        help: "Job messages with more dependencies are dead-lettered (default: 100).")
    var maxDependencies: Int?

    @Option(
        name: .customLong("max-parked-jobs"),
        help: "Most jobs held waiting for their dependencies; more wait in the broker (default: 1000).")
    var maxParkedJobs: Int?

    @Option(
        name: .customLong("max-crashes"),
        help: ArgumentHelp(
            "A job executing in this many worker processes when they died is dead-lettered instead of run again "
                + "(default: 3)."))
    var maxCrashes: Int?

    @Option(
        name: .customLong("max-jobs"),
        help: "After taking this many jobs, take no more, run them, and start afresh in the same process.")
    var maxJobs: Int?

    @Option(
        name: .customLong("max-memory"),
        help: ArgumentHelp(
            "Past this resident memory after jobs end, send back the jobs not started, let the executing ones end, "
                + "and start afresh in the same process.",
            valueName: "size: 512M, 2G"))
    var maxMemory: MemorySize?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also run a scheduler of the recurring jobs in this file (see `warren schedule`); one of all schedulers leads.",
            valueName: "file"))
    var schedule: String?

    @Option(name: .customLong("log-level"), help: "The least level of the lines to log (default: info).")
    var givenLogLevel: Logger.Level?

    @Option(name: .customLong("log-format"), help: "text, or json: one object per line (default: text).")
    var givenLogFormat: LogFormat?

    @OptionGroup public var metrics: MetricsOptions

    public init() {}

    /// Takes the settings of the environment and of the settings file for the options no flag gave, then checks the
    /// options that depend on each other.
    public mutating func validate() throws {
        try validate(environment: ProcessInfo.processInfo.environment)
    }

    /// ``validate()`` with the settings of `environment`.
    mutating func validate(environment: [String: String]) throws {
        let settings = try WorkerSettings(environment: environment, path: config)
        let filled = try apply(settings)
        do {
            try check()
            // What the settings gave is read now, so that an error names where it came from; what flags gave is read
            // as the worker starts.
            if !filled.isEmpty { _ = try configuration() }
        } catch let error as ValidationError {
            throw settings.attributing(error, to: filled)
        }
    }

    /// Checks the options that depend on each other.
    private func check() throws {
        try brokerWait.validate()
        try metrics.checkHost()
        if let problem = Topology.problem(creatingPriorityQueues: priorityQueues, quorumQueues: quorumQueues) {
            throw ValidationError("--priority-queues and --quorum-queues: \(problem)")
        }
        // NaN is in no range.
        if !(0...Self.maxGrace).contains(grace) {
            throw ValidationError("--grace \(grace): expected seconds from 0 to \(Int(Self.maxGrace)) (a year)")
        }
        if let maxJobs, maxJobs < 1 { throw ValidationError("--max-jobs \(maxJobs): expected at least 1") }
        if let maxMemory, maxMemory.bytes < 1 << 20 { throw ValidationError("--max-memory: expected at least 1M") }
    }

    /// The longest `--grace`, in seconds.
    static let maxGrace: Double = 31_536_000

    /// Builds the worker's configuration from the options.
    /// - Throws: `ValidationError` for malformed `name=value` options.
    public func configuration() throws -> Worker.Configuration {
        var configuration = Worker.Configuration(url: broker.brokerURL)
        if !queue.isEmpty { configuration.queues = queue }
        if let width { configuration.localQueues[OperationRegistry.defaultLocalQueue] = width }
        var named: Set<String> = []
        for entry in localQueues {
            let (name, value) = try Self.split(entry, option: "--local-queue", form: "name=width")
            guard let width = Int(value) else {
                throw ValidationError("--local-queue \(entry): width '\(value)' is not a number")
            }
            guard named.insert(name).inserted else { throw ValidationError("--local-queue \(name) is given twice") }
            configuration.localQueues[name] = width
        }
        for entry in rateLimits {
            let (type, value) = try Self.split(entry, option: "--rate-limit", form: "type=N/unit")
            guard configuration.rateLimits[type] == nil else {
                throw ValidationError("--rate-limit \(type) is given twice")
            }
            do {
                configuration.rateLimits[type] = try RateLimit(parsing: value)
            } catch let error as WarrenError {
                throw ValidationError("--rate-limit \(entry): \(error.message)")
            }
        }
        for entry in fleetRateLimits {
            let (type, value) = try Self.split(entry, option: "--fleet-rate-limit", form: "type=N/unit")
            guard configuration.fleetRateLimits[type] == nil else {
                throw ValidationError("--fleet-rate-limit \(type) is given twice")
            }
            do {
                configuration.fleetRateLimits[type] = try RateLimit(parsing: value)
            } catch let error as WarrenError {
                throw ValidationError("--fleet-rate-limit \(entry): \(error.message)")
            }
        }
        for entry in timeLimits {
            let (type, value) = try Self.split(entry, option: "--time-limit", form: "type=duration")
            guard configuration.timeLimits[type] == nil else {
                throw ValidationError("--time-limit \(type) is given twice")
            }
            guard let span = TimeSpan(argument: value) else {
                throw ValidationError(
                    "--time-limit \(entry): '\(value)' is no duration (seconds, or 250ms, 30s, 10m, 2h, 1d)")
            }
            let limit = span.duration
            guard span.seconds <= 31_536_000, limit >= .milliseconds(1) else {
                throw ValidationError("--time-limit \(entry): expected 1 ms to a year")
            }
            configuration.timeLimits[type] = limit
        }
        configuration.prefetch = prefetch
        configuration.priorityQueues = priorityQueues
        configuration.quorumQueues = quorumQueues
        if let workerID { configuration.workerID = workerID }
        configuration.shutdownGracePeriod = .milliseconds(Int(grace * 1000))
        configuration.brokerWaitAtStart = brokerWait.duration
        configuration.maxMessageBytes = maxMessageBytes ?? configuration.maxMessageBytes
        configuration.maxNestingDepth = maxNestingDepth ?? configuration.maxNestingDepth
        configuration.maxDependencies = maxDependencies ?? configuration.maxDependencies
        configuration.maxParkedJobs = maxParkedJobs ?? configuration.maxParkedJobs
        configuration.maxCrashes = maxCrashes ?? configuration.maxCrashes
        configuration.maxJobs = maxJobs
        configuration.maxResidentMemory = maxMemory?.bytes
        var logger = Logger(label: "warren.worker")
        logger.logLevel = logLevel
        configuration.logger = logger
        return configuration
    }

    /// Runs a worker with these options and `registry` until SIGTERM, SIGINT or SIGHUP (a second signal stops waiting for
    /// executing jobs). A worker that stops to recycle (`--max-jobs`, `--max-memory`) starts afresh: the process
    /// runs itself again, same arguments, same process id (``ProcessRecycling``).
    /// - Throws: `ValidationError` for bad options; ``WarrenError`` when the broker cannot be reached or is lost, or
    ///   the process cannot run itself again.
    public func run(registry: OperationRegistry) throws {
        let takingOver = ProcessRecycling.take()
        let inheritedDescriptors = takingOver.map { Set($0.inheritedDescriptors) } ?? ProcessRecycling.openDescriptors()
        guard let (worker, logger) = try runUntilStopped(registry: registry, takingOver: takingOver) else { return }
        let recycling = ProcessRecycling(
            rateLimitTurns: worker.handover.rateLimitTurns, inheritedDescriptors: inheritedDescriptors.sorted())
        try logFormat.reportingFailures(to: logger) { try recycling.exec(unless: { !worker.stoppedToRecycle }) }
    }

    /// Runs the worker until it stops, the scheduler of `--schedule` and the metrics server beside it, and stops
    /// them; the worker and its logger when it stopped to recycle.
    private func runUntilStopped(
        registry: OperationRegistry, takingOver: ProcessRecycling?
    ) throws -> (Worker, Logger)? {
        // Blocked before any thread starts, so in every thread: the signal sources below read them (a fresh copy of
        // a recycled worker starts with them blocked already), and none can end the process before they exist.
        var stopping = sigset_t()
        sigemptyset(&stopping)
        for number in ProcessRecycling.stopSignals { sigaddset(&stopping, number) }
        pthread_sigmask(SIG_BLOCK, &stopping, nil)
        // SIGINT or SIGTERM while the recycled process became this one: it stops as soon as it runs.
        let stopSignalCame = takingOver != nil && ProcessRecycling.takeStopSignalsHeldAcrossExec()
        StandardStreams.ignoreBrokenPipes()
        LogSetup.bootstrap(level: logLevel, format: logFormat)
        var registry = registry
        var assigned: Set<String> = []
        for entry in assign {
            let (type, queue) = try Self.split(entry, option: "--assign", form: "type=queue")
            guard registry.types.contains(type) else {
                throw ValidationError("--assign \(entry): unknown operation type '\(type)'")
            }
            guard assigned.insert(type).inserted else { throw ValidationError("--assign \(type) is given twice") }
            registry.assign(type, to: queue)
        }
        // A bad broker URL is an error (exit 1), as for every command, not a usage error.
        try logFormat.reportingFailures(to: Logger(label: "warren.worker")) {
            _ = try BrokerAddresses(broker.brokerURL, connectionName: "warren worker")
        }
        let worker: Worker
        do {
            var configuration = try self.configuration()
            configuration.takingOver = takingOver?.workerHandover
            worker = try Worker(configuration: configuration, registry: registry)
        } catch let error as WarrenError where error.code == .invalidConfiguration {
            throw ValidationError(error.message)
        }
        let scheduler = try schedule.map(makeScheduler(file:))
        if stopSignalCame { worker.stop() }
        let signals = ProcessRecycling.stopSignals.map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                worker.stop()
                scheduler?.stop()
            }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        var logger = worker.configuration.logger
        logger[metadataKey: "worker"] = "\(worker.configuration.workerID)"
        let health: KeyValuePairs<String, BrokerThreadHealth> =
            scheduler.map { ["worker": worker.health, "scheduler": $0.health] } ?? ["worker": worker.health]
        let metricsServer = try logFormat.reportingFailures(to: logger) {
            try metrics.startServer(logger: logger, health: health)
        }
        defer { metricsServer?.stop() }
        // The limit an alert compares process_resident_memory_bytes with.
        if metricsServer != nil, let maxMemory { Gauge(label: "warren_max_memory_bytes").record(maxMemory.bytes) }
        let schedulerEnded = scheduler.map { start($0, logger: logger) }
        defer {
            scheduler?.stop()
            schedulerEnded?.wait()
        }
        try logFormat.reportingFailures(to: logger) { try worker.runOnCurrentThread() }
        guard worker.stoppedToRecycle else { return nil }
        // A stop request from here on stops the fresh copy as it starts (ProcessRecycling.exec).
        logger.info("starting afresh")
        return (worker, logger)
    }

    /// The scheduler of `--schedule`, beside the worker: same broker, same kinds of queue.
    private func makeScheduler(file: String) throws -> Scheduler {
        do {
            var configuration = Scheduler.Configuration(url: broker.brokerURL, schedules: try ScheduleFile.load(file))
            configuration.priorityQueues = priorityQueues
            configuration.quorumQueues = quorumQueues
            configuration.brokerWaitAtStart = brokerWait.duration
            configuration.logger.logLevel = logLevel
            return try Scheduler(configuration: configuration)
        } catch let error as WarrenError where error.code != .broker {
            throw ValidationError("--schedule \(file): \(error.message)")
        }
    }

    /// Runs `scheduler` on a thread of its own; the semaphore is signalled when it ended. A scheduler that cannot
    /// reach the broker at start ends with a critical log line; the worker goes on.
    private func start(_ scheduler: Scheduler, logger: Logger) -> DispatchSemaphore {
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                try scheduler.runOnCurrentThread()
            } catch {
                logger.critical("the scheduler cannot start", metadata: ["error": "\(error)"])
            }
            ended.signal()
        }
        thread.name = "warren.scheduler"
        thread.start()
        return ended
    }

    static func split(_ entry: String, option: String, form: String) throws -> (String, String) {
        let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ValidationError("\(option) \(entry): expected \(form)")
        }
        return (parts[0], parts[1])
    }
}
