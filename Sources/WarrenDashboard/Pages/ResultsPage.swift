import Foundation
import Warren

/// The Results page: the latest results read from the results stream, newest first, filterable by status, type,
/// key and job id. A stale result, older than one already seen for its key, is marked as `warren results` marks it.
///
/// Thread safety: stateless.
enum ResultsPage {
    static let pageSize = 50

    static func render(_ context: PageContext, query: [String: String]) -> String {
        let status = query["status"].flatMap(JobStatus.init(rawValue:))
        let type = query["type"].flatMap { $0.isEmpty ? nil : $0 }
        let key = query["key"].flatMap { $0.isEmpty ? nil : $0 }
        let job = query["job"].flatMap { $0.isEmpty ? nil : $0 }
        let entries = context.feed.entries.reversed().filter { entry in
            (status.map { entry.result.status == $0 } ?? true) && (type.map { entry.result.type == $0 } ?? true)
                && (key.map { entry.result.key == $0 } ?? true) && (job.map { entry.result.jobID == $0 } ?? true)
        }
        let page = max(1, Int(query["page"] ?? "") ?? 1)
        var body = "<h1>Results</h1><form class=\"filters\" method=\"get\" action=\"/results\">"
        body += "<label>Status <select name=\"status\"><option value=\"\">any</option>"
        for candidate in JobStatus.allCases {
            let selected = status == candidate ? " selected" : ""
            body += "<option\(selected)>\(candidate.rawValue)</option>"
        }
        body += "</select></label>"
        for (name, label, value) in [("type", "Type", type), ("key", "Key", key), ("job", "Job id", job)] {
            body += "<label>\(label) <input name=\"\(name)\" value=\"\(HTML.escape(value ?? ""))\"></label>"
        }
        body += "<button type=\"submit\">Filter</button></form>\n<section id=\"results\" data-live>"
        body += "<p class=\"muted\">\(entries.count) of the \(context.feed.entries.count) latest results read.</p>"
        let shown = entries.dropFirst((page - 1) * pageSize).prefix(pageSize)
        if shown.isEmpty {
            body += "<p class=\"muted\">No result here yet.</p>"
        } else {
            body += table(Array(shown))
        }
        let items = query.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
        body += Layout.pager(total: entries.count, page: page, size: pageSize, path: "/results", query: items)
        body += "</section>"
        return Layout.page("Results", section: "/results", context, body: body)
    }

    static func table(_ entries: [ResultFeed.Entry]) -> String {
        var html = "<table><thead><tr><th>Finished</th><th>Job</th><th>Type</th><th>Key · seq</th><th>Status</th>"
        html += "<th class=\"num\">Attempt</th><th>Worker</th><th class=\"num\">Ran</th><th>Outcome</th>"
        html += "</tr></thead><tbody>"
        for entry in entries {
            let result = entry.result
            html += "<tr data-job=\"\(HTML.escape(result.jobID))\" data-status=\"\(result.status.rawValue)\">"
            html += "<td>\(HTML.time(result.timings.finishedAt))</td><td>\(HTML.jobLink(result.jobID))</td>"
            html += "<td class=\"mono\">\(HTML.escape(result.type ?? "–"))</td><td>"
            html +=
                result.key.map { "<span class=\"mono\">\(HTML.escape($0))</span> · \(result.sequence)" }
                ?? "<span class=\"muted\">– · \(result.sequence)</span>"
            html += "</td><td>\(status(entry))</td><td class=\"num\">\(result.attempt)</td>"
            html += "<td class=\"mono\">\(HTML.escape(result.workerID))</td>"
            html += "<td class=\"num\">\(ran(result).map(HTML.duration) ?? "–")</td>"
            html += "<td class=\"outcome\">\(HTML.escape(outcome(result)))</td></tr>"
        }
        return html + "</tbody></table>"
    }

    /// The status as a tag, with `stale` for a result older than one seen for its key.
    static func status(_ entry: ResultFeed.Entry) -> String {
        var html = "<span class=\"tag \(entry.result.status.rawValue)\">\(entry.result.status.rawValue)</span>"
        if let newer = entry.staleBehind {
            html +=
                " <span class=\"tag stale\" title=\"a result of sequence \(newer) of its key came first\">stale</span>"
        }
        return html
    }

    /// Seconds from start to finish, when both are known.
    static func ran(_ result: JobResult) -> Double? {
        guard let start = result.timings.startedAt, let end = result.timings.finishedAt else { return nil }
        return end.timeIntervalSince(start)
    }

    /// The output, the error or the cancellation, cut to a line.
    static func outcome(_ result: JobResult) -> String {
        let text: String
        if let error = result.error {
            text = "\(error.code): \(error.message)"
        } else if let cancellation = result.cancellation {
            text = "\(cancellation.reason): \(cancellation.message)"
        } else {
            text = result.output?.description ?? ""
        }
        return text.count > 120 ? String(text.prefix(119)) + "…" : text
    }
}
