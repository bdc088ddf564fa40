import Foundation
import Testing

@testable import Warren

@Suite("ControlStream")
struct ControlStreamTests {
    private func stream(queues: [String] = ["a", "b"]) throws -> ControlStream {
        ControlStream(
            link: try WorkerParts.link(),
            configuration: WorkerParts.configuration {
                $0.queues = queues
                $0.workerID = "me"
            },
            logger: WorkerParts.logger)
    }

    @Test func aPauseCoversTheQueuesItNamesThatThisWorkerConsumes() throws {
        let stream = try stream()
        guard case .setPaused(true, let all) = stream.command(of: .pause(), at: 1) else {
            return unexpected("no pause")
        }
        #expect(all == ["a", "b"])
        guard case .setPaused(false, let one) = stream.command(of: .resume(queue: "b"), at: 1) else {
            return unexpected("no resume")
        }
        #expect(one == ["b"])
        guard case .setPaused(true, let none) = stream.command(of: .pause(queue: "c"), at: 1) else {
            return unexpected("no pause")
        }
        #expect(none.isEmpty)
        #expect(stream.command(of: .pause(worker: "another"), at: 1) == nil)
    }

    @Test func aResizeReadBeforeThisWorkersStartIsNotForIt() throws {
        // No start-up marker read yet: every resize is from before.
        #expect(try stream().command(of: .resize(localQueue: "default", width: 3), at: 10) == nil)
    }

    @Test func cancellationsAndCrashReportsAreForEveryWorker() throws {
        let stream = try stream()
        guard case .cancel = stream.command(of: .cancel(jobIDs: ["j"]), at: 1) else { return unexpected("no cancel") }
        let report = ControlMessage.crashed(jobIDs: ["j"], worker: "w", journal: "t")
        guard case .crashed = stream.command(of: report, at: 1) else { return unexpected("no report") }
        guard case .sync(let token) = stream.command(of: .sync(token: "t"), at: 1) else { return unexpected("no sync") }
        #expect(token == "t")
    }

    @Test func onlyAFreshStatusRequestIsAnswered() throws {
        let stream = try stream()
        guard case .status("reply-q", 5) = stream.command(of: .status(replyTo: "reply-q", jobs: 5), at: 1) else {
            return unexpected("no status")
        }
        var stale = ControlMessage.status(replyTo: "reply-q", jobs: nil)
        stale.sentAt = Date(timeIntervalSinceNow: -3600)
        #expect(stream.command(of: stale, at: 1) == nil)
    }
}
