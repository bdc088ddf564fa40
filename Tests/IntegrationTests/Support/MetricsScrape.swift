import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension ChildProcess {
    /// The `/metrics` URL of a worker started with `--metrics-port`, from its "metrics endpoint listening" log line
    /// (text or JSON).
    func metricsURL(timeout: Duration = .seconds(30)) throws -> URL {
        try waitForStderr(containing: "metrics endpoint listening", timeout: timeout)
        let line = try #require(stderr.split(separator: "\n").first { $0.contains("metrics endpoint listening") })
        let port: String
        if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
            port = try #require(object["port"] as? String)
        } else {
            let match = try #require(line.firstMatch(of: /port=(\d+)/))
            port = String(match.1)
        }
        return try #require(URL(string: "http://127.0.0.1:\(port)/metrics"))
    }
}

enum MetricsScrape {
    /// Fetches `url` and checks the answer: 200, Prometheus's text content type, valid exposition text.
    static func fetch(_ url: URL) async throws -> PrometheusText {
        let (data, response) = try await URLSession.shared.data(from: url)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect(http.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = try #require(String(data: data, encoding: .utf8))
        do {
            return try PrometheusText(text)
        } catch {
            Issue.record("not valid exposition text: \(error)\n\(text)")
            throw error
        }
    }

    /// Fetches `url` until `done` holds for what it serves, or `timeout` passes; returns the last answer.
    static func fetch(
        _ url: URL, timeout: Duration = .seconds(20), until done: (PrometheusText) -> Bool
    ) async throws -> PrometheusText {
        let deadline = ContinuousClock.now + timeout
        while true {
            let metrics = try await fetch(url)
            if done(metrics) || ContinuousClock.now >= deadline { return metrics }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
