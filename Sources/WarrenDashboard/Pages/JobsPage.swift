import Foundation
import Warren

/// The Jobs page: the jobs the workers hold, executing ones first, then the waiting ones with why they wait; a
/// cancel button per job and per key. Paged: a large fleet lists thousands.
///
/// Thread safety: stateless.
enum JobsPage {
    static let pageSize = 50

    static func render(_ context: PageContext, query: [String: String]) -> String {
        var jobs = context.fleet.listedJobs
        if let worker = query["worker"], !worker.isEmpty { jobs = jobs.filter { $0.worker.workerID == worker } }
        if query["state"] == "executing" { jobs = jobs.filter { $0.job.state == .executing } }
        if query["state"] == "waiting" { jobs = jobs.filter { $0.job.state != .executing } }
        let page = max(1, Int(query["page"] ?? "") ?? 1)
        let shown = jobs.dropFirst((page - 1) * pageSize).prefix(pageSize)
        var body = "<h1>Jobs</h1><form class=\"filters\" method=\"get\" action=\"/jobs\">"
        body += "<label>Worker <input name=\"worker\" value=\"\(HTML.escape(query["worker"] ?? ""))\"></label>"
        body += "<label>State <select name=\"state\">"
        for (value, label) in [("", "all"), ("executing", "executing"), ("waiting", "waiting")] {
            let selected = (query["state"] ?? "") == value ? " selected" : ""
            body += "<option value=\"\(value)\"\(selected)>\(label)</option>"
        }
        body += "</select></label><button type=\"submit\">Show</button></form>\n"
        body += "<section id=\"jobs\" data-live>"
        body += "<p class=\"muted\">\(jobs.count) jobs listed"
        let unlisted = context.fleet.unlistedJobs
        if unlisted > 0 { body += "; workers hold \(unlisted) more than they list" }
        body += ". Jobs still in the broker's queues are counted on the Overview.</p>"
        if shown.isEmpty {
            body += "<p class=\"muted\">No job here.</p>"
        } else {
            body += table(Array(shown), context)
        }
        let items = query.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
        body += Layout.pager(total: jobs.count, page: page, size: pageSize, path: "/jobs", query: items)
        body += "</section>"
        return Layout.page("Jobs", section: "/jobs", context, body: body)
    }

    /// A table of held jobs with their progress and cancel buttons.
    static func table(_ jobs: [(worker: WorkerStatus, job: WorkerStatus.Job)], _ context: PageContext) -> String {
        var html = "<table class=\"jobs\"><thead><tr><th>Job</th><th>Worker</th><th>Type</th><th>Key · seq</th>"
        html += "<th class=\"num\">Attempt</th><th>State</th><th class=\"num\">Age</th><th>Progress</th>"
        html += "<th>Cancel</th></tr></thead><tbody>"
        for (worker, job) in jobs {
            html += "<tr data-job=\"\(HTML.escape(job.id))\" data-state=\"\(HTML.escape(job.state.rawValue))\">"
            html += "<td>\(HTML.jobLink(job.id))</td><td class=\"mono\">\(HTML.escape(worker.workerID))</td>"
            html += "<td class=\"mono\">\(HTML.escape(job.type))</td><td>"
            if let key = job.key {
                html += "<span class=\"mono\">\(HTML.escape(key))</span> · \(job.sequence)"
            } else {
                html += "<span class=\"muted\">– · \(job.sequence)</span>"
            }
            html += "</td><td class=\"num\">\(job.attempt)</td><td>\(state(of: job))</td>"
            html += "<td class=\"num\">\(HTML.duration(job.executingSeconds ?? job.heldSeconds))</td>"
            let live = context.feed.progress[job.id]
            html +=
                "<td class=\"progress\">\(HTML.progress(live?.fraction ?? job.progress, message: live?.message ?? job.progressMessage))</td>"
            html += "<td class=\"controls\">"
            html += HTML.actionForm(
                "cancel", label: "Cancel", fields: [("job", job.id)], confirm: "Cancel job \(job.id)?",
                token: context.token, returnTo: context.path, style: "danger")
            if let key = job.key {
                html += HTML.actionForm(
                    "cancel", label: "Cancel key", fields: [("key", key)],
                    confirm: "Cancel every job of key \(key) enqueued so far?", token: context.token,
                    returnTo: context.path, style: "danger")
            }
            html += "</td></tr>"
        }
        return html + "</tbody></table>"
    }

    /// Where a held job is, and why a waiting one waits.
    static func state(of job: WorkerStatus.Job) -> String {
        var text: String
        switch job.state {
        case .executing: text = "<span class=\"tag executing\">executing</span>"
        case .waiting: text = "waiting for a thread"
        case .waitingForDependencies:
            text = "waiting for dependencies"
            if let ids = job.waitingOn, !ids.isEmpty {
                text += ": " + ids.prefix(5).map(HTML.jobLink).joined(separator: ", ")
                if ids.count > 5 { text += " and \(ids.count - 5) more" }
            }
        case .waitingForTurn: text = "waiting for its turn (rate limit)"
        case .waitingToRunAlone: text = "waiting to run alone (it was executing when a worker died)"
        case .held: text = "held until its queue can be reached"
        default: text = HTML.escape(job.state.rawValue)
        }
        if let cancelled = job.cancelled { text += " <span class=\"tag\">cancelling: \(HTML.escape(cancelled))</span>" }
        if job.unique == true { text += " <span class=\"tag\">unique</span>" }
        return text
    }
}
