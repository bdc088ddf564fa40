import Foundation
import Testing

extension Integration {
    @Suite struct BenchCommand {
        /// Every figure a report must carry, for the raw client, the floor and Warren, with both ratios.
        static let figureKeys =
            ["concurrent", "drain"].flatMap { mode in [1, 10, 100].map { "throughput.\(mode).prefetch\($0)" } } + [
                "latency.p50", "latency.p90", "latency.p99", "cancellation.p50", "cancellation.p99",
                "worker.cpuPer1000Jobs", "worker.rssIdle", "worker.rssAtRest", "worker.rssAfterSoak",
                "worker.rssPeak", "producer.cpuPer1000Jobs",
            ]

        @Test("bench --quick measures three sides, prints a table and writes JSON with every figure (values unchecked)")
        func quickRun() throws {
            let url = try TestEnvironment.brokerURL
            let path = try TestEnvironment.temporaryDirectory().appendingPathComponent("bench.json").path
            // Fewer jobs than --quick: a debug build's worker is several times slower than a release one.
            let output = try CLI.run(
                [
                    "bench", "--quick", "--repetitions", "1", "--json", path, "--url", url, "--jobs", "300",
                    "--jobs-at-prefetch-1", "50", "--latency-samples", "30", "--cancellations", "3",
                    "--soak-jobs", "1000",
                ],
                timeout: .seconds(180))
            #expect(output.status == 0, "\(output.stderr)")
            let header = try #require(output.stdout.split(separator: "\n").first)
            #expect(
                header.split(separator: " ", omittingEmptySubsequences: true)
                    == ["figure", "raw", "floor", "warren", "warren/raw", "warren/floor", "target"],
                "\(header)")
            for side in ["baseline", "floor", "warren"] {
                #expect(output.stderr.contains("\n  \(side) throughput."), "the \(side) side ran: \(output.stderr)")
            }

            let data = try #require(FileManager.default.contents(atPath: path))
            let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(report["version"] as? Int == 1)
            #expect((report["broker"] as? String)?.contains("***") == true, "the password is redacted")
            let figures = try #require(report["figures"] as? [[String: Any]])
            let byKey = Dictionary(figures.map { ($0["key"] as? String ?? "", $0) }) { first, _ in first }
            for key in Self.figureKeys {
                let figure = try #require(byKey[key], "figure \(key) is missing")
                #expect(figure["ratio"] is NSNumber, "\(key) has no ratio")
                #expect(figure["floorRatio"] is NSNumber, "\(key) has no ratio to the floor")
                #expect(figure["unit"] is String, "\(key) has no unit")
                for side in ["baseline", "floor", "warren"] {
                    let spread = try #require(figure[side] as? [String: Any], "\(key) has no \(side) values")
                    for field in ["median", "min", "max"] {
                        #expect(spread[field] is NSNumber, "\(key).\(side).\(field) is missing")
                    }
                    #expect((spread["samples"] as? [Any])?.count == 1, "\(key).\(side): one sample per repetition")
                }
            }
        }

        @Test("a report path that cannot be written and a broker pid of no process are refused before measuring")
        func refusedBeforeMeasuring() throws {
            let url = try TestEnvironment.brokerURL
            let directory = try TestEnvironment.temporaryDirectory()
            for (arguments, message) in [
                (
                    ["--json", "/nonexistent-warren/bench.json"],
                    "--json /nonexistent-warren/bench.json: "
                        + "/nonexistent-warren: No such file or directory"
                ),
                (["--json", directory.path], "--json \(directory.path): is a directory"),
                (["--broker-pid", "0"], "--broker-pid 0: no such process"),
                (["--broker-pid", "2147483647"], "--broker-pid 2147483647: no such process"),
            ] {
                let output = try CLI.run(["bench", "--quick", "--url", url] + arguments, timeout: .seconds(30))
                #expect(output.status == 64, "\(arguments): \(output.stderr)")
                #expect(output.stderr.contains(message), "\(output.stderr)")
                #expect(!output.stderr.contains("repetition"), "nothing was measured")
            }
        }
    }
}
