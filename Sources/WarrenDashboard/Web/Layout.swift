import Foundation
import Warren

/// What a page is rendered from: the fleet as last polled, the results as read, and the request's particulars.
///
/// Thread safety: immutable (a value).
struct PageContext: Sendable {
    var fleet: FleetSnapshot
    var feed: ResultFeed.State
    /// The anti-forgery token every form carries.
    var token: String
    /// The path and query of the request, where an action returns to.
    var path: String
    /// What the last action did, shown once.
    var notice: String?
    var now = Date()
}

/// The frame around every page: navigation, the broker's state and how old the data is.
///
/// Thread safety: stateless.
enum Layout {
    static let sections: [(path: String, title: String)] = [
        ("/", "Overview"), ("/jobs", "Jobs"), ("/results", "Results"), ("/dead", "Dead letters"),
        ("/schedules", "Schedules"),
    ]

    /// A whole page: `body` inside the frame. Parts marked `data-live` are replaced as the page polls.
    static func page(_ title: String, section: String, _ context: PageContext, body: String) -> String {
        var html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · Warren</title>
            <link rel="stylesheet" href="/assets/app.css">
            <link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
            <script src="/assets/app.js" defer></script>
            </head><body>
            <header><a class="brand" href="/"><img src="/assets/icon.svg" alt="" width="22" height="22"> Warren</a><nav>
            """
        for (path, name) in sections {
            let current = path == section ? " aria-current=\"page\"" : ""
            html += "<a href=\"\(path)\"\(current)>\(name)</a>"
        }
        html += "</nav>"
        html += "<noscript><span class=\"muted\">Reload to refresh</span></noscript></header>\n"
        html += "<div id=\"freshness\" data-live>\(freshness(context))</div>\n"
        if let notice = context.notice {
            html += "<p class=\"notice\" role=\"status\">\(HTML.escape(notice))</p>\n"
        }
        html += "<main>\n\(body)\n</main></body></html>\n"
        return html
    }

    /// The banner that says whether the broker answers, and how old the data shown is.
    static func freshness(_ context: PageContext) -> String {
        let fleet = context.fleet
        guard let age = fleet.age(now: context.now) else {
            if let problem = fleet.problem {
                return "<p class=\"outage\">Broker unreachable: \(HTML.escape(problem)). Trying again.</p>"
            }
            return "<p class=\"muted\">Asking the broker…</p>"
        }
        var text = ""
        if let problem = fleet.problem {
            let since = fleet.problemSince.map { " since \(HTML.time($0))" } ?? ""
            text += "<p class=\"outage\">Broker unreachable\(since): \(HTML.escape(problem)). "
            text += "Data below is \(HTML.duration(age)) old; trying again.</p>"
        } else if let problem = context.feed.problem {
            text += "<p class=\"outage\">Results stream unreachable: \(HTML.escape(problem)). Trying again.</p>"
        }
        let stale = age > 10 ? " class=\"stale-data\"" : ""
        text += "<p\(stale) data-age=\"\(Int(age))\"><span class=\"muted\">Data as of \(HTML.time(fleet.takenAt)), "
        text += "\(HTML.duration(age)) ago.</span></p>"
        return text
    }

    /// Links to the pages of a list of `total` items, `size` a page, keeping the other query items.
    static func pager(total: Int, page: Int, size: Int, path: String, query: [(String, String)]) -> String {
        let pages = max(1, (total + size - 1) / size)
        guard pages > 1 else { return "" }
        func link(_ number: Int, _ label: String) -> String {
            let items = query.filter { $0.0 != "page" } + [("page", String(number))]
            let href = path + "?" + items.map { "\($0.0)=\(HTML.query($0.1))" }.joined(separator: "&")
            return "<a href=\"\(HTML.escape(href))\">\(label)</a>"
        }
        var html = "<nav class=\"pager\">Page \(page) of \(pages) "
        if page > 1 { html += link(page - 1, "← previous") + " " }
        if page < pages { html += link(page + 1, "next →") }
        return html + "</nav>"
    }
}
