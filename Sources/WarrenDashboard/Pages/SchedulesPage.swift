import Foundation
import Warren

/// The Schedules page: the recurring jobs of the schedule file the dashboard was given, their next ticks, the
/// latest result of each, and the schedulers that stand by.
///
/// Thread safety: stateless.
enum SchedulesPage {
    static func render(
        _ context: PageContext, schedules: [Schedule], file: String?, leader: FleetMonitor.LeaderReading
    ) -> String {
        var body = "<h1>Schedules</h1>\n<section id=\"schedules\" data-live>"
        switch context.fleet.schedulers {
        case nil:
            body += "<p>No scheduler has run on this broker: there is no queue \(Topology.scheduleQueue).</p>"
        case 0?:
            body += "<p class=\"outage\">No scheduler runs: no recurring job is enqueued.</p>"
        case let count?:
            body += "<p>\(count) scheduler\(count == 1 ? "" : "s") run. The broker hands the lead to one of them, "
            body += "which enqueues every tick; the others stand by and take over when it stops.</p>"
        }
        body += leading(leader, now: context.now)
        guard let file else {
            body += "<p class=\"muted\">Start the dashboard with <code>--schedule FILE</code>, the file the schedulers "
            body += "use, to list its recurring jobs here.</p></section>"
            return Layout.page("Schedules", section: "/schedules", context, body: body)
        }
        body += "<p class=\"muted\">From <code>\(HTML.escape(file))</code>.</p>"
        body += "<table><thead><tr><th>Schedule</th><th>Type</th><th>Queue</th><th>When</th><th>Next ticks (UTC)</th>"
        body += "<th>Latest result</th></tr></thead><tbody>"
        for schedule in schedules {
            body +=
                "<tr data-schedule=\"\(HTML.escape(schedule.name))\"><td class=\"mono\">\(HTML.escape(schedule.name))</td>"
            body +=
                "<td class=\"mono\">\(HTML.escape(schedule.type))</td><td class=\"mono\">\(HTML.escape(schedule.queue))</td>"
            body += "<td class=\"mono\">\(HTML.escape(schedule.recurrence.description))</td><td>"
            var tick = context.now
            var ticks: [String] = []
            for _ in 0..<3 {
                guard let next = schedule.recurrence.tick(after: tick) else { break }
                ticks.append(HTML.time(next))
                tick = next
            }
            body += ticks.isEmpty ? "no further tick" : ticks.joined(separator: "<br>")
            body += "</td><td>"
            let prefix = schedule.name + ":"
            if let latest = context.feed.entries.last(where: { $0.result.jobID.hasPrefix(prefix) }) {
                body += "\(ResultsPage.status(latest)) \(HTML.jobLink(latest.result.jobID))"
            } else {
                body += "<span class=\"muted\">none read</span>"
            }
            body += "</td></tr>"
        }
        body += "</tbody></table></section>"
        return Layout.page("Schedules", section: "/schedules", context, body: body)
    }

    /// Which scheduler leads, as it announced itself.
    static func leading(_ reading: FleetMonitor.LeaderReading, now: Date) -> String {
        if let problem = reading.problem {
            return "<p class=\"outage\">Cannot read which scheduler leads: \(HTML.escape(problem))</p>"
        }
        guard reading.takenAt != nil else { return "<p class=\"muted\">Asking which scheduler leads…</p>" }
        guard let leader = reading.leader else {
            return "<p class=\"muted\">No scheduler announces that it leads: none leads, or the leader runs a "
                + "version of Warren that does not announce itself.</p>"
        }
        let age = now.timeIntervalSince(leader.announcedAt)
        var html =
            "<p id=\"leader\">Leading: <strong class=\"mono\">\(HTML.escape(leader.host)) pid \(leader.pid)</strong>"
        html += ", since \(HTML.time(leader.since)), with \(leader.schedules.count) schedules. "
        html += "It announced itself \(HTML.duration(max(0, age))) ago"
        // It announces itself every 30 s: one silent for longer may have stopped.
        html += age > 45 ? "; it may have stopped since.</p>" : ".</p>"
        return html
    }
}
