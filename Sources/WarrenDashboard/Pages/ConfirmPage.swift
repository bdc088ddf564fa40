import Foundation

/// Asks before an action posted without the script's confirmation (JavaScript off): the same form again, confirmed.
///
/// Thread safety: stateless.
enum ConfirmPage {
    static func render(action: String, form: FormData, context: PageContext) -> String {
        let kept = form.fields.filter { $0.name != "csrf" && $0.name != "confirmed" }
        let described = kept.filter { $0.name != "return" }.map { "\($0.name) \($0.value)" }.joined(separator: ", ")
        var body = "<h1>Confirm</h1><p>Do <strong>\(HTML.escape(action))</strong>"
        body += described.isEmpty ? "?" : " for \(HTML.escape(described))?"
        body += "</p><form method=\"post\" action=\"/actions/\(HTML.escape(action))\">"
        body += "<input type=\"hidden\" name=\"csrf\" value=\"\(context.token)\">"
        body += "<input type=\"hidden\" name=\"confirmed\" value=\"yes\">"
        for (name, value) in kept {
            body += "<input type=\"hidden\" name=\"\(HTML.escape(name))\" value=\"\(HTML.escape(value))\">"
        }
        let back = DashboardRoutes.returnPath(form["return"])
        body += "<button type=\"submit\" class=\"danger\">Yes, do it</button> "
        body += "<a href=\"\(HTML.escape(back))\">No, go back</a></form>"
        return Layout.page("Confirm", section: "", context, body: body)
    }
}
