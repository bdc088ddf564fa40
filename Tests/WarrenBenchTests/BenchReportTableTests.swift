import Foundation
import Testing

@testable import WarrenBench

@Suite struct BenchReportTable {
    /// Three repetitions of every figure: Warren at `warren` times the raw client's values, the floor at `floor`
    /// times them; worker CPU and cancellation set apart, to judge the targets held to the floor and to 2 ms.
    static func samples(floor: Double?, warren: Double) -> [SideKind: [String: [Double]]] {
        let keys = FigureCatalog.requiredKeys(prefetches: [1, 10, 100]) + [FigureCatalog.brokerCPU]
        func side(_ factor: Double) -> [String: [Double]] {
            Dictionary(
                uniqueKeysWithValues: keys.map { key in
                    let value = key.hasPrefix("throughput") ? 12_340.0 : key.contains("rss") ? 21.5 : 123.4
                    return (key, [value * factor, value * factor * 0.9, value * factor * 1.1])
                })
        }
        var samples: [SideKind: [String: [Double]]] = [.baseline: side(1), .warren: side(warren)]
        if let floor { samples[.floor] = side(floor) }
        samples[.warren]?[FigureCatalog.cancellationP99] = [1.5, 1.4, 1.9]
        return samples
    }

    static func report(_ samples: [SideKind: [String: [Double]]], options: Benchmark.Options = .full) -> BenchReport {
        BenchReport(
            date: Date(), broker: "amqp://guest:***@127.0.0.1:5672/%2F", options: options,
            host: .init(cores: 2, compilerRunning: false, workerExecutable: "/usr/bin/warren"),
            discardedCancellations: 0,
            figures: FigureCatalog.figures(from: samples, prefetches: [1, 10, 100]))
    }

    @Test("the table shows the raw client, the floor and Warren, both ratios and the targets, within 150 columns")
    func threeSides() throws {
        let table = Self.report(Self.samples(floor: 0.9, warren: 0.8)).table()
        let lines = table.split(separator: "\n").map(String.init)
        #expect(
            lines[0].split(separator: " ") == [
                "figure", "raw", "floor", "warren", "warren/raw", "warren/floor", "target",
            ])
        for line in lines { #expect(line.count <= 150, "\(line.count) columns: \(line)") }
        let throughput = try #require(lines.first { $0.hasPrefix("jobs/s at once, prefetch 10 ") })
        #expect(throughput.contains("12,340 (11,106–13,574)"), "the raw client's median and range: \(throughput)")
        #expect(
            throughput.split(separator: " ").filter { $0.hasSuffix("x") }.prefix(2) == ["0.80x", "0.89x"],
            "warren/raw and warren/floor: \(throughput)")
        #expect(throughput.hasSuffix("✗ ≥ 0.85x raw"), "\(throughput)")
        let roundTrip = try #require(lines.first { $0.hasPrefix("round trip p50 (ms)") })
        #expect(roundTrip.hasSuffix("✓ ≤ 1.1x floor"), "0.8 / 0.9 of the floor: \(roundTrip)")
        let workerCPU = try #require(lines.first { $0.hasPrefix("worker CPU/1,000 jobs (ms)") })
        #expect(workerCPU.hasSuffix("✓ ≤ 1.3x floor"), "\(workerCPU)")
        let brokerCPU = try #require(lines.first { $0.hasPrefix("broker CPU/1,000 jobs (ms)") })
        #expect(brokerCPU.hasSuffix("✓ ≤ 1.15x raw"), "\(brokerCPU)")
        let cancellation = try #require(lines.first { $0.hasPrefix("cancel → cancelled p99 (ms)") })
        #expect(cancellation.hasSuffix("✓ ≤ 2 ms"), "Warren's median of 1.5 ms: \(cancellation)")
        #expect(table.contains("floor: the design's floor"), "the footer says what the floor is")
    }

    @Test("Warren slower than the floor by more than the targets allow misses them; the JSON carries all three sides")
    func missedAgainstTheFloor() throws {
        let report = Self.report(Self.samples(floor: 1.5, warren: 2))
        let byKey = Dictionary(uniqueKeysWithValues: report.figures.map { ($0.key, $0) })
        let roundTrip = try #require(byKey[FigureCatalog.latencyP99])
        #expect(roundTrip.target == BenchFigure.Target(goal: "≤ 1.1x floor", isMet: false))
        #expect(abs((roundTrip.floorRatio ?? 0) - 2 / 1.5) < 1e-9)
        #expect(abs(roundTrip.ratio - 2) < 1e-9)

        let json = try #require(try JSONSerialization.jsonObject(with: report.json()) as? [String: Any])
        let figures = try #require(json["figures"] as? [[String: Any]])
        for figure in figures {
            for side in ["baseline", "floor", "warren"] {
                #expect(figure[side] is [String: Any], "\(figure["key"] ?? "?") has no \(side)")
            }
        }
    }

    @Test("without the floor, its columns are left out and figures held to it show no target")
    func withoutTheFloor() throws {
        var options = Benchmark.Options.full
        options.measuresFloor = false
        let table = Self.report(Self.samples(floor: nil, warren: 0.8), options: options).table()
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines[0].split(separator: " ") == ["figure", "raw", "warren", "warren/raw", "target"])
        let roundTrip = try #require(lines.first { $0.hasPrefix("round trip p50 (ms)") })
        #expect(roundTrip.hasSuffix("0.80x"), "no target: \(roundTrip)")
        let throughput = try #require(lines.first { $0.hasPrefix("jobs/s draining, prefetch 100 ") })
        #expect(throughput.hasSuffix("✗ ≥ 0.85x raw"), "\(throughput)")
        #expect(table.contains("The floor was not measured."))
    }

    @Test("the sides rotate between repetitions, so that drift favours none; --no-floor leaves the floor out")
    func sideOrder() {
        var options = Benchmark.Options.full
        #expect(
            (1...4).map(options.sides(inRepetition:)) == [
                [.baseline, .floor, .warren], [.floor, .warren, .baseline], [.warren, .baseline, .floor],
                [.baseline, .floor, .warren],
            ])
        options.measuresFloor = false
        #expect(
            (1...3).map(options.sides(inRepetition:)) == [
                [.baseline, .warren], [.warren, .baseline], [.baseline, .warren],
            ])
    }
}
