import Foundation
import Warren

/// The Overview: job queues with their rates, workers with their local queues, the jobs executing now, and a chart
/// of throughput and failures drawn from what the page has seen since it opened.
///
/// Thread safety: stateless.
enum OverviewPage {
    /// How many executing jobs the overview lists; the Jobs page lists them all.
    static let executingShown = 10

    static func render(_ context: PageContext) -> String {
        let fleet = context.fleet
        let throughput = context.feed.throughput
        let minute = throughput.rates(over: 60, now: context.now)
        let executing = fleet.workers.reduce(0) { $0 + $1.localQueues.reduce(0) { $0 + $1.executing } }
        let held = fleet.workers.reduce(0) { $0 + $1.localQueues.reduce(0) { $0 + $1.waiting } }
        let waiting = fleet.queues.reduce(0) { $0 + ($1.status?.waiting ?? 0) }
        var body = "<section id=\"summary\" data-live><h1>Overview</h1><dl class=\"tiles\">"
        let tiles: [(String, String, String)] = [
            ("Workers", "\(fleet.workers.count)", "workers"),
            ("Executing", "\(executing)", "executing"),
            ("Waiting in workers", "\(held)", "held"),
            ("Waiting in queues", "\(waiting)", "waiting"),
            ("Started/s", HTML.rate(minute.started), "started"),
            ("Succeeded/s", HTML.rate(minute.succeeded), "succeeded"),
            ("Failed/s", HTML.rate(minute.failed), "failed"),
            ("Dead letters", fleet.deadLetters.map(String.init) ?? "–", "dead"),
        ]
        for (label, value, name) in tiles {
            body += "<div><dt>\(label)</dt><dd data-tile=\"\(name)\">\(value)</dd></div>"
        }
        body += "</dl><p class=\"muted\">Rates over the last minute, from the results read.</p></section>\n"
        body += """
            <section><h2>Throughput</h2>
            <div id="chart" class="chart" role="img" aria-label="Jobs succeeded and failed per second since this page opened">
            <p class="muted">The chart needs JavaScript: it draws what the page sees while it stays open.</p></div>
            </section>

            """
        body += queues(context)
        body += workers(context)
        body += executingJobs(context)
        return Layout.page("Overview", section: "/", context, body: body)
    }

    private static func queues(_ context: PageContext) -> String {
        let throughput = context.feed.throughput
        var html = "<section id=\"queues\" data-live><h2>Job queues</h2><table><thead><tr><th>Queue</th>"
        html += "<th class=\"num\">Waiting</th><th class=\"num\">Delayed</th><th class=\"num\">Consumers</th>"
        html += "<th class=\"num\">Started/s</th><th class=\"num\">Succeeded/s</th><th class=\"num\">Failed/s</th>"
        html += "<th class=\"num\">5 min ok/failed</th><th>Controls</th></tr></thead><tbody>"
        for row in context.fleet.queues {
            let name = HTML.escape(row.name)
            html += "<tr data-queue=\"\(name)\"><td class=\"mono\">\(name)"
            if context.fleet.isPaused(queue: row.name) { html += " <span class=\"tag paused\">paused</span>" }
            html += "</td>"
            if let status = row.status {
                let minute = throughput.rates(over: 60, queue: row.name, now: context.now)
                let five = throughput.rates(over: 300, queue: row.name, now: context.now)
                html += "<td class=\"num\">\(status.waiting)</td><td class=\"num\">\(status.delayed)</td>"
                html += "<td class=\"num\">\(status.consumers)</td>"
                html += "<td class=\"num\">\(HTML.rate(minute.started))</td>"
                html += "<td class=\"num\">\(HTML.rate(minute.succeeded))</td>"
                html += "<td class=\"num\">\(HTML.rate(minute.failed))</td>"
                html += "<td class=\"num\">\(HTML.rate(five.succeeded)) / \(HTML.rate(five.failed))</td>"
            } else {
                let why = row.unreachable.map { "unreachable: \(HTML.escape($0))" } ?? "no such queue"
                html += "<td colspan=\"7\" class=\"muted\">\(why)</td>"
            }
            html += "<td class=\"controls\">"
            let fields = [("queue", row.name)]
            html += HTML.actionForm(
                "pause", label: "Pause", fields: fields, confirm: "Pause queue \(row.name) on every worker?",
                token: context.token, returnTo: context.path)
            html += HTML.actionForm(
                "resume", label: "Resume", fields: fields, confirm: "Resume queue \(row.name) on every worker?",
                token: context.token, returnTo: context.path)
            html += HTML.actionForm(
                "cancel-all", label: "Cancel all", fields: fields,
                confirm: "Cancel every job of queue \(row.name) enqueued so far: waiting, delayed and executing?",
                token: context.token, returnTo: context.path, style: "danger")
            html += "</td></tr>"
        }
        html += "</tbody></table><p class=\"muted\">Rates count each result under the queue of its job, where the "
        html += "fleet's status replies tell it.</p></section>\n"
        return html
    }

    private static func workers(_ context: PageContext) -> String {
        let fleet = context.fleet
        var html = "<section id=\"workers\" data-live><h2>Workers</h2>"
        if fleet.workers.isEmpty && fleet.gone.isEmpty {
            return html + "<p class=\"muted\">No live worker answered.</p></section>\n"
        }
        html += "<table><thead><tr><th>Worker</th><th>Host</th><th>Queues</th><th>Local queues</th>"
        html += "<th class=\"num\">Done</th><th>State</th><th>Last seen</th><th>Controls</th></tr></thead><tbody>"
        for worker in fleet.workers {
            html += "<tr data-worker=\"\(HTML.escape(worker.workerID))\">"
            html += "<td class=\"mono\">\(HTML.escape(worker.workerID))</td>"
            html += "<td>\(HTML.escape(worker.host)) <span class=\"muted\">pid \(worker.pid), up "
            html += "\(HTML.duration(worker.uptimeSeconds))</span></td><td>"
            html += worker.queues.map { queue in
                let paused = worker.pausedQueues.contains(queue) ? " <span class=\"tag paused\">paused</span>" : ""
                return "<span class=\"mono\">\(HTML.escape(queue))</span>\(paused)"
            }.joined(separator: "<br>")
            html += "</td><td>"
            for local in worker.localQueues {
                html += "<div class=\"local\"><span class=\"mono\">\(HTML.escape(local.name))</span> "
                html += "width \(local.width), executing \(local.executing), waiting \(local.waiting) "
                html += resizeForm(worker: worker.workerID, local: local, context)
                html += "</div>"
            }
            html += "</td><td class=\"num\">"
            html += ["succeeded", "failed", "cancelled"].map { "\(worker.totals[$0] ?? 0) \($0)" }
                .joined(separator: "<br>")
            html += "</td><td>\(state(of: worker))</td><td>\(HTML.time(fleet.takenAt))</td><td class=\"controls\">"
            let fields = [("worker", worker.workerID)]
            html += HTML.actionForm(
                "pause", label: "Pause", fields: fields, confirm: "Pause worker \(worker.workerID) on every queue?",
                token: context.token, returnTo: context.path)
            html += HTML.actionForm(
                "resume", label: "Resume", fields: fields, confirm: "Resume worker \(worker.workerID) on every queue?",
                token: context.token, returnTo: context.path)
            html += "</td></tr>"
        }
        for (worker, seen) in fleet.gone {
            html += "<tr class=\"gone\"><td class=\"mono\">\(HTML.escape(worker.workerID))</td>"
            html += "<td>\(HTML.escape(worker.host)) <span class=\"muted\">pid \(worker.pid)</span></td>"
            html += "<td colspan=\"3\" class=\"muted\">no answer since</td><td>not answering</td>"
            html += "<td>\(HTML.time(seen))</td><td></td></tr>"
        }
        return html + "</tbody></table></section>\n"
    }

    private static func resizeForm(worker: String, local: WorkerStatus.LocalQueueStatus, _ context: PageContext)
        -> String
    {
        let input =
            "<input type=\"number\" name=\"width\" min=\"\(LocalQueue.widths.lowerBound)\" "
            + "max=\"\(LocalQueue.widths.upperBound)\" value=\"\(local.width)\" aria-label=\"New width\" required>"
        return HTML.actionForm(
            "resize", label: "Resize", fields: [("worker", worker), ("localQueue", local.name)],
            confirm: "Set the width of local queue \(local.name) on worker \(worker)?", token: context.token,
            returnTo: context.path, extra: input)
    }

    /// `paused`, `stopping`, `recycling (maxJobs)`, or `running`.
    static func state(of worker: WorkerStatus) -> String {
        var tags: [String] = []
        if !worker.pausedQueues.isEmpty {
            let all = Set(worker.pausedQueues).isSuperset(of: worker.queues)
            tags.append("<span class=\"tag paused\">\(all ? "paused" : "partly paused")</span>")
        }
        if worker.stopping == true { tags.append("<span class=\"tag stopping\">stopping</span>") }
        if let recycling = worker.recycling {
            tags.append("<span class=\"tag\">recycling (\(HTML.escape(recycling)))</span>")
        }
        return tags.isEmpty ? "running" : tags.joined(separator: " ")
    }

    private static func executingJobs(_ context: PageContext) -> String {
        let executing = context.fleet.listedJobs.filter { $0.job.state == .executing }
        var html = "<section id=\"executing\" data-live><h2>Executing now</h2>"
        guard !executing.isEmpty else { return html + "<p class=\"muted\">No job executes.</p></section>\n" }
        html += JobsPage.table(Array(executing.prefix(executingShown)), context)
        if executing.count > executingShown {
            html += "<p><a href=\"/jobs\">All \(executing.count) executing jobs</a></p>"
        }
        return html + "</section>\n"
    }
}
