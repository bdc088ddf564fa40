import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Progress {
        @Test("enqueue --wait prints progress reports (plain lines when stderr is not a terminal)")
        func enqueueWaitShowsProgress() throws {
            let queue = TestEnvironment.uniqueName("progress")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let output = try CLI.run([
                "enqueue", "sum", "--url", try TestEnvironment.brokerURL, "--queue", queue, "--wait",
                "--input", #"{"numbers":[1,2,3,4,5,6,7,8],"delayMs":150}"#,
            ])
            #expect(output.status == 0, "\(output.stderr)")
            let id = try #require(output.stdout.split(separator: "\n").first.map(String.init))
            let reports = output.stderr.split(separator: "\n").filter { $0.hasPrefix("progress \(id) ") }
            #expect(reports.count >= 2, "\(output.stderr)")
            #expect(reports.first?.contains("0% worker=") == true)
            #expect(reports.contains { $0.contains("adding 5") })
            #expect(output.stdout.contains("succeeded \(id)"))
        }

        @Test("the library reports progress to a producer waiting for the result, in order")
        func libraryProgress() throws {
            let queue = TestEnvironment.uniqueName("progress-lib")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            let job = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...6), delayMs: 150), queue: queue), watch: true)
            var fractions: [Double] = []
            let result = try producer.waitForResult(of: job.id, timeout: .seconds(60)) { fractions.append($0.fraction) }
            #expect(result.status == .succeeded)
            #expect(fractions.count >= 2)
            #expect(fractions == fractions.sorted())
        }
    }
}

extension Integration.Progress {
    @Test("waiting for one job is not held up by progress reports of another watched job")
    func progressOfOtherJobs() throws {
        let queue = TestEnvironment.uniqueName("progress-other")
        defer { BrokerProbe.delete(queue) }
        let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
        defer { worker.terminate() }
        let producer = try Producer.forTests()
        let noisy = try producer.enqueue(
            JobRequest(type: "sum", input: .numbers(Array(1...5), delayMs: 200), queue: queue), watch: true)
        let quiet = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 1.5], queue: queue), watch: true)
        #expect(try producer.waitForResult(of: quiet.id, timeout: .seconds(60)).status == .succeeded)
        #expect(try producer.waitForResult(of: noisy.id, timeout: .seconds(60)).status == .succeeded)
    }
}

extension Integration.Progress {
    @Test("a handler's progress of 0/0 or 1/0 neither stops its worker nor reaches the wire as anything but 0 to 1")
    func progressThatIsNotANumber() throws {
        let queue = TestEnvironment.uniqueName("progress-nan")
        defer { BrokerProbe.delete(queue) }
        var registry = OperationRegistry.demo
        registry.register(
            "divide",
            blocking: { (total: Double, job: JobContext) -> Double in
                job.reportProgress(0 / total)
                Thread.sleep(forTimeInterval: 0.15)
                job.reportProgress(1 / total)
                return total
            })
        var configuration = Worker.Configuration(url: try TestEnvironment.brokerURL)
        configuration.queues = [queue]
        let worker = try Worker(configuration: configuration, registry: registry)
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread {
            do { try worker.runOnCurrentThread() } catch { Issue.record("the worker failed: \(error)") }
            ended.signal()
        }
        thread.start()
        defer {
            worker.stop()
            _ = ended.wait(timeout: .now() + 60)
        }
        let producer = try Producer.forTests()
        for _ in 0..<2 {
            let job = try producer.enqueue(JobRequest(type: "divide", input: 0, queue: queue), watch: true)
            var fractions: [Double] = []
            let result = try producer.waitForResult(of: job.id, timeout: .seconds(60)) { fractions.append($0.fraction) }
            #expect(result.status == .succeeded, "\(result)")
            #expect(fractions == [1], "0/0 is dropped, 1/0 is 1")
        }
    }
}
