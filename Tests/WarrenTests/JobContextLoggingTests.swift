import Foundation
import Logging
import Testing

@testable import Warren

@Suite("JobContext logging")
struct JobContextLoggingTests {
    private struct Record: Sendable {
        var message: String
        var metadata: Logger.Metadata
    }

    /// Keeps the message and metadata of every record logged through it.
    private struct CapturingLogHandler: LogHandler {
        let records: Locked<[Record]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            records.withLock { $0.append(Record(message: "\(event.message)", metadata: merged)) }
        }
    }

    /// The worker's own "job started" (debug) and what the operation logs carry the job's metadata, at any level.
    @Test(arguments: [Logger.Level.debug, .info])
    func whatAJobLogsCarriesTheJobAndTheWorker(level: Logger.Level) async throws {
        let records = Locked<[Record]>([])
        var workerLogger = Logger(label: "worker") { _ in CapturingLogHandler(records: records) }
        workerLogger.logLevel = level
        workerLogger[metadataKey: "worker"] = "host-7"
        let job = JobContext(
            descriptor: TestJobs.descriptor(id: "job-5", type: "sum"), attempt: 2, logger: workerLogger)
        let collector = ReportCollector()
        let operation = JobOperation(
            job: job, input: .null,
            body: .blocking { _, context in
                context.logger.info("adding", metadata: ["step": "1"])
                context.logger.info("done")
                return .null
            }, report: collector.report)
        operation.start()
        _ = try await collector.waitForReport(of: "job-5")

        let logged = records.value
        #expect(logged.map(\.message) == (level == .debug ? ["job started"] : []) + ["adding", "done"])
        for record in logged {
            #expect(record.metadata["job"] == "job-5")
            #expect(record.metadata["type"] == "sum")
            #expect(record.metadata["attempt"] == "2")
            #expect(record.metadata["worker"] == "host-7")
        }
        #expect(logged.first { $0.message == "adding" }?.metadata["step"] == "1")
    }
}
