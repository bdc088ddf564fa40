import AMQP
import Foundation
import Warren

/// The Dead letters page: reason, queue, type, size and age of each, with requeue and delete per letter and for
/// the letters ticked.
///
/// Thread safety: stateless.
enum DeadLettersPage {
    static let pageSize = 50

    static func render(_ context: PageContext, listing: FleetMonitor.DeadListing, query: [String: String]) -> String {
        var body = "<h1>Dead letters</h1>\n<section id=\"dead\" data-live>"
        if let problem = listing.problem {
            body += "<p class=\"outage\">Cannot list the dead letters: \(HTML.escape(problem))</p>"
        }
        guard listing.takenAt != nil else {
            return Layout.page(
                "Dead letters", section: "/dead", context,
                body: body + "<p class=\"muted\">Listing the dead letters… this page refreshes.</p></section>")
        }
        body += "<p class=\"muted\">\(listing.total) dead letters"
        if listing.total > listing.letters.count { body += "; the oldest \(listing.letters.count) are listed" }
        body += ". Listed at \(HTML.time(listing.takenAt)).</p>"
        let page = max(1, Int(query["page"] ?? "") ?? 1)
        let shown = listing.letters.dropFirst((page - 1) * pageSize).prefix(pageSize)
        if shown.isEmpty {
            body += "<p class=\"muted\">No dead letter.</p></section>"
            return Layout.page("Dead letters", section: "/dead", context, body: body)
        }
        // One form for the selection: its buttons name the action. The per-letter buttons are their own forms,
        // linked to no checkbox.
        body += "<form id=\"selection\" method=\"post\" action=\"/actions/dead-requeue\" "
        body += "data-confirm=\"Act on the dead letters ticked?\">"
        body += "<input type=\"hidden\" name=\"csrf\" value=\"\(context.token)\">"
        body += "<input type=\"hidden\" name=\"return\" value=\"\(HTML.escape(context.path))\"></form>"
        body += "<table><thead><tr><th><span class=\"sr\">Select</span></th><th>Job</th><th>Reason</th><th>Queue</th>"
        body += "<th>Type</th><th class=\"num\">Size</th><th class=\"num\">Age</th><th>Actions</th></tr></thead><tbody>"
        for letter in shown {
            body += "<tr data-job=\"\(HTML.escape(letter.jobID ?? ""))\"><td>"
            if let id = letter.jobID {
                body += "<input type=\"checkbox\" form=\"selection\" name=\"job\" value=\"\(HTML.escape(id))\" "
                body += "aria-label=\"Select \(HTML.escape(id))\">"
            }
            body += "</td><td>\(letter.jobID.map(HTML.jobLink) ?? "<span class=\"muted\">no id</span>")</td>"
            body += "<td><span class=\"mono\">\(HTML.escape(letter.reason))</span>"
            if let message = letter.message { body += "<br><span class=\"muted\">\(HTML.escape(message))</span>" }
            body += "</td><td class=\"mono\">\(HTML.escape(letter.queue ?? "–"))</td>"
            body += "<td class=\"mono\">\(HTML.escape(letter.type ?? "–"))</td><td class=\"num\">\(letter.size)</td>"
            body +=
                "<td class=\"num\">\(age(of: letter, now: context.now).map(HTML.duration) ?? "–")</td><td class=\"controls\">"
            if let id = letter.jobID {
                body += HTML.actionForm(
                    "dead-requeue", label: "Requeue", fields: [("job", id)],
                    confirm: "Send job \(id) back to its queue?", token: context.token, returnTo: context.path)
                body += HTML.actionForm(
                    "dead-delete", label: "Delete", fields: [("job", id)],
                    confirm: "Remove the dead letter of job \(id) for good?", token: context.token,
                    returnTo: context.path, style: "danger")
            }
            body += "</td></tr>"
        }
        body += "</tbody></table><p class=\"selection\">Ticked letters: "
        body += "<button type=\"submit\" form=\"selection\" formaction=\"/actions/dead-requeue\">Requeue</button> "
        body +=
            "<button type=\"submit\" form=\"selection\" formaction=\"/actions/dead-delete\" class=\"danger\">Delete</button></p>"
        let items = query.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
        body += Layout.pager(total: listing.letters.count, page: page, size: pageSize, path: "/dead", query: items)
        body += "</section>"
        return Layout.page("Dead letters", section: "/dead", context, body: body)
    }

    /// How long ago the letter was enqueued or dead-lettered: its `x-death` time, else its timestamp.
    static func age(of letter: DeadLetter, now: Date) -> Double? {
        if case .array(let deaths)? = letter.properties.headers?["x-death"], case .table(let first)? = deaths.first,
            case .timestamp(let seconds)? = first["time"]
        {
            return now.timeIntervalSince1970 - Double(seconds)
        }
        return letter.properties.timestamp.map { now.timeIntervalSince1970 - Double($0) }
    }
}
