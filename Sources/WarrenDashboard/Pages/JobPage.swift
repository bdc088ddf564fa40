import Foundation
import Warren

/// A job's page: where it is now (held by a worker, dead, or ended), its descriptor as far as the broker lets the
/// dashboard see it, its timings, its output or error, and its dependencies.
///
/// Thread safety: stateless.
enum JobPage {
    static func render(_ context: PageContext, id: String, dead: [DeadLetter]) -> String {
        var body = "<h1>Job <span class=\"mono\">\(HTML.escape(id))</span></h1>\n<section id=\"job\" data-live>"
        let held = context.fleet.job(id)
        let results = context.feed.entries.filter { $0.result.jobID == id }
        let letter = dead.first { $0.jobID == id }
        if held == nil && results.isEmpty && letter == nil {
            body += "<p class=\"muted\">No worker lists this job, no result of it was read, and it is not among the "
            body += "dead letters listed. It may wait in a broker queue, or its result may be older than the "
            body += "dashboard reads.</p>"
        }
        if let (worker, job) = held { body += heldSection(worker, job, context) }
        if let latest = results.last { body += resultSection(latest, runs: results.count) }
        if let letter { body += deadSection(letter, context) }
        body += "</section>"
        return Layout.page("Job \(id)", section: "", context, body: body)
    }

    private static func heldSection(_ worker: WorkerStatus, _ job: WorkerStatus.Job, _ context: PageContext) -> String {
        let live = context.feed.progress[job.id]
        let rows: [(String, String)] = [
            ("State", JobsPage.state(of: job)),
            ("Worker", "<span class=\"mono\">\(HTML.escape(worker.workerID))</span> on \(HTML.escape(worker.host))"),
            ("Type", "<span class=\"mono\">\(HTML.escape(job.type))</span>"),
            (
                "Queue",
                "<span class=\"mono\">\(HTML.escape(job.queue))</span>, local "
                    + "<span class=\"mono\">\(HTML.escape(job.localQueue))</span>"
            ),
            ("Priority", job.priority.rawValue),
            ("Key · sequence", "\(job.key.map(HTML.escape) ?? "–") · \(job.sequence)"),
            ("Attempt", "\(job.attempt)"),
            ("Held for", HTML.duration(job.heldSeconds)),
            ("Executing for", job.executingSeconds.map(HTML.duration) ?? "–"),
            ("Time limit", job.timeLimitSeconds.map(HTML.duration) ?? "none"),
            ("Progress", HTML.progress(live?.fraction ?? job.progress, message: live?.message ?? job.progressMessage)),
            ("Waiting on", job.waitingOn.map { $0.map(HTML.jobLink).joined(separator: ", ") } ?? "–"),
        ]
        var html = "<h2>Held by a worker</h2>" + definitions(rows)
        html += HTML.actionForm(
            "cancel", label: "Cancel this job", fields: [("job", job.id)], confirm: "Cancel job \(job.id)?",
            token: context.token, returnTo: context.path, style: "danger")
        return html
    }

    private static func resultSection(_ entry: ResultFeed.Entry, runs: Int) -> String {
        let result = entry.result
        var rows: [(String, String)] = [
            ("Status", ResultsPage.status(entry)),
            ("Type", "<span class=\"mono\">\(HTML.escape(result.type ?? "–"))</span>"),
            ("Key · sequence", "\(result.key.map(HTML.escape) ?? "–") · \(result.sequence)"),
            ("Attempt", "\(result.attempt)\(result.redelivered ? " (redelivered)" : "")"),
            ("Worker", "<span class=\"mono\">\(HTML.escape(result.workerID))</span>"),
            ("Enqueued", HTML.time(result.timings.enqueuedAt)),
            ("Received", HTML.time(result.timings.receivedAt)),
            ("Started", HTML.time(result.timings.startedAt)),
            ("Finished", HTML.time(result.timings.finishedAt)),
            ("Ran", ResultsPage.ran(result).map(HTML.duration) ?? "–"),
        ]
        if let requeued = result.requeuedAt { rows.append(("Requeued from the dead letters", HTML.time(requeued))) }
        if runs > 1 { rows.append(("Results read", "\(runs); the latest is shown")) }
        var html = "<h2>Result</h2>" + definitions(rows)
        if let error = result.error {
            html += "<h3>Error</h3><pre>\(HTML.escape("\(error.code): \(error.message)"))</pre>"
        }
        if let cancellation = result.cancellation {
            html += "<h3>Cancelled</h3><pre>\(HTML.escape("\(cancellation.reason): \(cancellation.message)"))</pre>"
        }
        if let output = result.output {
            html += "<h3>Output</h3><pre>\(HTML.escape(pretty(Array(output.description.utf8))))</pre>"
        }
        return html
    }

    private static func deadSection(_ letter: DeadLetter, _ context: PageContext) -> String {
        var html = "<h2>Dead letter</h2>"
        html += definitions([
            ("Reason", "<span class=\"mono\">\(HTML.escape(letter.reason))</span>"),
            ("Message", HTML.escape(letter.message ?? "–")),
            ("Queue", letter.queue.map { "<span class=\"mono\">\(HTML.escape($0))</span>" } ?? "–"),
            ("Size", "\(letter.size) bytes"),
            (
                "Dependencies",
                dependencies(in: letter.body).map { $0.map(HTML.jobLink).joined(separator: ", ") } ?? "none"
            ),
        ])
        if let id = letter.jobID {
            html += HTML.actionForm(
                "dead-requeue", label: "Requeue", fields: [("job", id)], confirm: "Send job \(id) back to its queue?",
                token: context.token, returnTo: context.path)
            html += HTML.actionForm(
                "dead-delete", label: "Delete", fields: [("job", id)], confirm: "Remove the dead letter of job \(id)?",
                token: context.token, returnTo: context.path, style: "danger")
        }
        html += "<h3>Descriptor</h3><pre>\(HTML.escape(pretty(letter.body)))</pre>"
        return html
    }

    private static func definitions(_ rows: [(String, String)]) -> String {
        "<dl class=\"facts\">" + rows.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }.joined() + "</dl>"
    }

    /// The `dependencies` of a descriptor, if it has any.
    static func dependencies(in body: [UInt8]) -> [String]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let ids = object["dependencies"] as? [String], !ids.isEmpty
        else { return nil }
        return ids
    }

    /// JSON indented for reading, at most 64 KiB of it; other bytes as text.
    static func pretty(_ body: [UInt8]) -> String {
        let limit = 65_536
        if body.count <= limit,
            let object = try? JSONSerialization.jsonObject(with: Data(body), options: .fragmentsAllowed),
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        {
            return String(decoding: data, as: UTF8.self)
        }
        let text = String(decoding: body.prefix(limit), as: UTF8.self)
        return body.count > limit ? text + "\n… (\(body.count) bytes in all)" : text
    }
}
