import Foundation
import Testing

@testable import Warren

/// `Worker.init` checks its configuration against the registry without connecting.
@Suite("Worker.Configuration")
struct WorkerConfigurationTests {
    private let url = "amqp://guest:guest@localhost:5672/%2F"

    @Test func defaults() {
        let configuration = Worker.Configuration(url: url)
        #expect(configuration.queues == ["warren.default"])
        #expect(configuration.localQueues == ["default": ProcessInfo.processInfo.activeProcessorCount])
        #expect(configuration.prefetch == nil)
        #expect(configuration.effectivePrefetch == ProcessInfo.processInfo.activeProcessorCount)
        #expect(configuration.maxMessageBytes == 1 << 20)
        #expect(configuration.shutdownGracePeriod == .seconds(30))
        #expect(configuration.workerID.hasSuffix("-\(ProcessInfo.processInfo.processIdentifier)"))
        #expect(configuration.maxCrashes == 3)
        #expect(configuration.crashJournalDirectory == StateDirectory.path + "/workers")
        #expect(configuration.brokerWaitAtStart == .seconds(60))
    }

    @Test func aNegativeBrokerWaitIsRejected() {
        var configuration = Worker.Configuration(url: url)
        configuration.brokerWaitAtStart = .seconds(-1)
        #expect(rejection(configuration)?.message == "broker wait at start -1.0 seconds must not be negative")
    }

    @Test func aCrashLimitBelowOneIsRejected() {
        var configuration = Worker.Configuration(url: url)
        configuration.maxCrashes = 0
        #expect(rejection(configuration)?.message.hasSuffix("parked jobs 0, crashes 1") == true)
    }

    @Test func effectivePrefetchIsTheTotalWidthUnlessSet() {
        var configuration = Worker.Configuration(url: url)
        configuration.localQueues = ["default": 2, "io": 8]
        #expect(configuration.effectivePrefetch == 10)
        configuration.prefetch = 3
        #expect(configuration.effectivePrefetch == 3)
    }

    @Test func aValidConfigurationIsAccepted() throws {
        var configuration = Worker.Configuration(url: "amqp://u:secret@broker:5673/jobs")
        configuration.workerID = "w1"
        configuration.localQueues = ["default": 2, "cpu": 1]
        var registry = OperationRegistry.demo
        registry.assign("sum", to: "cpu")
        let worker = try Worker(configuration: configuration, registry: registry)
        #expect(worker.configuration.workerID == "w1")
    }

    private func rejection(_ configuration: Worker.Configuration, registry: OperationRegistry = .demo)
        -> WarrenError?
    {
        let error = #expect(throws: WarrenError.self) { try Worker(configuration: configuration, registry: registry) }
        #expect(error?.code == .invalidConfiguration)
        return error
    }

    @Test func aTimeLimitForAnUnknownTypeOrOutOfRangeIsRejected() throws {
        var configuration = Worker.Configuration(url: "amqp://localhost")
        configuration.timeLimits = ["resize": .seconds(30)]
        #expect(
            rejection(configuration)?.message.hasPrefix(
                "time limit for operation type 'resize', which this worker does not run") == true)
        configuration.timeLimits = ["sum": .zero]
        #expect(
            rejection(configuration)?.message
                == "time limit 0.0 seconds for operation type 'sum' is outside 1 ms to a year")
        configuration.timeLimits = ["sum": .seconds(31_536_001)]
        #expect(rejection(configuration) != nil)
        configuration.timeLimits = ["sum": .milliseconds(1), "sleep": .seconds(31_536_000)]
        #expect(try Worker(configuration: configuration, registry: .demo).configuration.timeLimits.count == 2)
    }

    @Test(arguments: [1, 501]) func aNestingDepthOutsideTwoToFiveHundredIsRejected(_ depth: Int) {
        var configuration = Worker.Configuration(url: "amqp://localhost")
        configuration.maxNestingDepth = depth
        #expect(rejection(configuration)?.message.hasPrefix("nesting depth \(depth) is outside 2...500") == true)
    }

    @Test func aGracePeriodOrReconnectDelayOutOfRangeIsRejected() throws {
        var configuration = Worker.Configuration(url: "amqp://localhost")
        configuration.shutdownGracePeriod = .seconds(-1)
        #expect(rejection(configuration)?.message == "shutdown grace period -1.0 seconds is outside 0 to a year")
        configuration.shutdownGracePeriod = .zero
        configuration.maxReconnectDelay = .zero
        #expect(
            rejection(configuration)?.message
                == "max reconnect delay 0.0 seconds is outside 100 ms (the first wait) to an hour")
        var scheduler = Scheduler.Configuration(
            url: "amqp://localhost", schedules: [Schedule(name: "n", recurrence: .every(.seconds(60)), type: "echo")])
        scheduler.maxReconnectDelay = .seconds(7200)
        #expect(throws: WarrenError.self) { try Scheduler(configuration: scheduler) }
    }

    @Test func recyclingLimitsThatCannotWorkAreRejected() throws {
        var configuration = Worker.Configuration(url: "amqp://localhost")
        configuration.maxJobs = 0
        #expect(rejection(configuration)?.message == "max jobs 0 must be at least 1")
        configuration.maxJobs = 1
        configuration.maxResidentMemory = (1 << 20) - 1
        #expect(rejection(configuration)?.message == "max resident memory 1048575 bytes must be at least 1 MiB")
        configuration.maxResidentMemory = 1 << 20
        let worker = try Worker(configuration: configuration, registry: .demo)
        #expect(!worker.stoppedToRecycle)
        worker.stop()
        #expect(!worker.stoppedToRecycle)
    }

    @Test func residentMemoryIsReadFromProc() throws {
        let resident = try #require(ResidentMemory.bytes())
        // A Swift test process holds megabytes, and far less than a terabyte.
        #expect(resident > 1 << 20 && resident < 1 << 40)
        #expect(ResidentMemory.describe(412 << 20) == "412 MiB")
        #expect(ResidentMemory.describe(3 << 29) == "1.5 GiB")
        #expect(ResidentMemory.describe(1_500_000) == "1 MiB")
    }

    @Test func aBadURLIsRejectedWithoutThePassword() {
        let error = rejection(Worker.Configuration(url: "http://u:secret@broker/"))
        #expect(error?.message.contains("secret") == false)
    }

    @Test func anEmptyQueueListIsRejected() {
        var configuration = Worker.Configuration(url: url)
        configuration.queues = []
        #expect(rejection(configuration)?.message == "a worker needs at least one queue to consume")
    }

    @Test(arguments: [
        "", "warren.dead", "warren.dead.watch", "warren.results", "warren.control", "warren.delay.jobs.8s", "amq.gen-1",
    ])
    func aQueueThatCannotHoldJobsIsRejected(name: String) {
        var configuration = Worker.Configuration(url: url)
        configuration.queues = ["jobs", name]
        #expect(rejection(configuration)?.message == Topology.problem(withJobQueue: name))
        #expect(Topology.problem(withJobQueue: name) != nil)
    }

    @Test func aJobQueueNameLeavesRoomForItsDelayQueues() {
        let longest = String(repeating: "q", count: Topology.maxJobQueueNameLength)
        #expect(Topology.problem(withJobQueue: longest) == nil)
        #expect(Topology.delayQueue(for: longest, seconds: Topology.delayQueueSeconds.last!).utf8.count == 255)
        #expect(Topology.problem(withJobQueue: longest + "q")?.contains("at most 235") == true)
        #expect(Topology.problem(withJobQueue: "warren.default") == nil)
    }

    @Test(arguments: [0, 10_001])
    func aWidthOutsideWhatResizeAllowsIsRejected(width: Int) {
        var configuration = Worker.Configuration(url: url)
        configuration.localQueues = ["default": width]
        configuration.prefetch = 1
        #expect(
            rejection(configuration)?.message
                == "local queue 'default' has width \(width); it must be from 1 to 10000, as warren resize allows")
    }

    @Test func aQueueGivenTwiceOrAnEmptyWorkerIDIsRejected() {
        var twice = Worker.Configuration(url: url)
        twice.queues = ["a", "b", "a"]
        #expect(rejection(twice)?.message == "queue 'a' is given twice")
        var nameless = Worker.Configuration(url: url)
        nameless.workerID = ""
        #expect(rejection(nameless)?.message.contains("a worker id must be 1 to 200 bytes") == true)
    }

    @Test(arguments: [0, 65_536])
    func aPrefetchOutOfRangeIsRejected(prefetch: Int) {
        var configuration = Worker.Configuration(url: url)
        configuration.prefetch = prefetch
        #expect(rejection(configuration)?.message == "prefetch \(prefetch) is outside 1...65535")
    }

    @Test func aTypeOnAMissingLocalQueueIsRejected() {
        var registry = OperationRegistry.demo
        registry.assign("sum", to: "cpu")
        var configuration = Worker.Configuration(url: url)
        configuration.localQueues = ["default": 2, "io": 4]
        #expect(
            rejection(configuration, registry: registry)?.message
                == "operation type 'sum' runs on local queue 'cpu', which this worker does not have "
                + "(it has: default, io)"
        )
    }
}
