import Foundation
import Testing

@testable import Warren

@Suite("JobContext progress")
struct JobContextProgressTests {
    /// A job whose progress reports land in `reports`.
    private func job(reporting reports: Locked<[Double]>) -> JobContext {
        JobContext(
            descriptor: TestJobs.descriptor(type: "sum"), attempt: 1, logger: TestJobs.logger,
            progress: { fraction, _ in reports.withLock { $0.append(fraction) } })
    }

    @Test func aFractionThatIsNotANumberIsDroppedAndOneOutsideTakesTheNearestBound() {
        let reports = Locked<[Double]>([])
        let job = job(reporting: reports)
        job.reportProgress(.nan)
        job.reportProgress(-.infinity)
        #expect(reports.value == [0])
        Thread.sleep(forTimeInterval: 0.11)
        job.reportProgress(Double(1) / Double(0))
        #expect(reports.value == [0, 1])
    }

    @Test func onlyTheFirstReportAtOneEscapesTheRateLimit() {
        let reports = Locked<[Double]>([])
        let job = job(reporting: reports)
        job.reportProgress(0.5)
        job.reportProgress(0.6)
        job.reportProgress(1)
        job.reportProgress(1)
        job.reportProgress(42)
        #expect(reports.value == [0.5, 1])
    }

    @Test func aProgressMessageIsAlwaysEncodable() throws {
        let long = String(repeating: "é", count: 5000)
        let progress = ProgressMessage(jobID: "j", fraction: .nan, message: long, workerID: "w")
        #expect(progress.fraction == 0)
        #expect(progress.message?.unicodeScalars.count == ProgressMessage.maxMessageLength)
        _ = try WireCoding.encoder.encode(progress)
        #expect(ProgressMessage(jobID: "j", fraction: .infinity, message: nil, workerID: "w").fraction == 1)
    }

    @Test(arguments: [("1e300", 1.0), ("-3", 0.0), ("0.25", 0.25)])
    func aReportAnyClientSentReadsWithAFractionFromZeroToOne(fraction: String, read: Double) throws {
        let body =
            #"{"version":1,"kind":"progress","jobId":"j","fraction":\#(fraction),"workerId":"w","at":"2026-11-25T07:00:00Z"}"#
        let progress = try ProgressMessage.decode(Array(body.utf8))
        #expect(progress.fraction == read)
        #expect(
            progress.jobID == "j" && progress.workerID == "w" && progress.version == 1 && progress.kind == "progress")
    }
}
