import Foundation

/// The worker's cost over a long run: CPU time per 1,000 jobs and memory, at rest and after many jobs.
extension Repetition {
    func soak(of side: any BenchSide) throws -> [String: Double] {
        let queue = name(side, "soak")
        let megabyte = 1_048_576.0
        return try withWorker(side, queue: queue, prefetch: options.soakPrefetch) { worker in
            Thread.sleep(forTimeInterval: 0.5)
            let idle = try worker.snapshot()
            let warmUp = queue + "-w-"
            _ = try runJobs(
                side, ids: BenchJobs.ids(warmUp, count: max(options.soakJobs / 20, 1)), queue: queue, idPrefix: warmUp)
            Thread.sleep(forTimeInterval: 0.5)
            let rest = try worker.snapshot()
            let brokerBefore = benchmark.configuration.brokerPID.map(ProcessSnapshot.treeCPUSeconds(root:))
            let producerBefore = ProcessSnapshot.currentThreadCPUSeconds()
            let idPrefix = queue + "-m-"
            _ = try runJobs(
                side, ids: BenchJobs.ids(idPrefix, count: options.soakJobs), queue: queue, idPrefix: idPrefix)
            let producerCPU = ProcessSnapshot.currentThreadCPUSeconds() - producerBefore
            let brokerCPU = benchmark.configuration.brokerPID.map(ProcessSnapshot.treeCPUSeconds(root:)).map {
                $0 - brokerBefore!
            }
            Thread.sleep(forTimeInterval: 0.5)
            let after = try worker.snapshot()
            let perThousand = 1_000_000 / Double(options.soakJobs)  // seconds per job → ms per 1,000 jobs
            var figures = [
                FigureCatalog.workerCPU: (after.cpuSeconds - rest.cpuSeconds) * perThousand,
                FigureCatalog.producerCPU: producerCPU * perThousand,
                FigureCatalog.workerIdleRSS: Double(idle.residentBytes) / megabyte,
                FigureCatalog.workerRestRSS: Double(rest.residentBytes) / megabyte,
                FigureCatalog.workerSoakRSS: Double(after.residentBytes) / megabyte,
            ]
            if let brokerCPU { figures[FigureCatalog.brokerCPU] = brokerCPU * perThousand }
            return figures
        }
    }
}
