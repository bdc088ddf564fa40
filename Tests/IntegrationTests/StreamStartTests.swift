import Foundation
import Testing
import Warren

extension Integration {
    /// RabbitMQ refuses consumers of a stream queue for a moment after it is declared (406 "does not have a replica
    /// on the local node", or 541 INTERNAL_ERROR), which is when `scripts/demo` starts its workers and
    /// `warren results` together on a new broker.
    @Suite struct StreamStart {
        @Test("workers and warren results started as the streams are created wait for them instead of failing")
        func startTogether() throws {
            let url = try TestEnvironment.brokerURL
            // The race is lost in about one start in four: six rounds make a regression show most of the time.
            for round in 1...6 {
                BrokerProbe.delete(Topology.resultsStream)
                BrokerProbe.delete(Topology.controlStream)
                let queue = TestEnvironment.uniqueName("stream-start")
                defer { BrokerProbe.delete(queue) }
                let workers = try (1...2).map { index in
                    try ChildProcess(
                        TestEnvironment.warrenBinary,
                        ["worker", "--url", url, "--queue", queue, "--worker-id", "\(queue)-\(index)"],
                        name: "worker \(index) of round \(round)")
                }
                defer { workers.forEach { $0.terminate() } }
                let reader = try CLI.run(["results", "--since", "5s", "--idle", "0.5", "--url", url])
                #expect(reader.status == 0, "round \(round): \(reader.stderr)")
                for worker in workers { try worker.waitForStderr(containing: "worker started") }
            }
        }
    }
}
