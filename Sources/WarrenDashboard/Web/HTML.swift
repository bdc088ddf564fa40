import Foundation

/// Text for HTML pages: escaping, and the small pieces every page uses.
///
/// Thread safety: stateless.
enum HTML {
    /// `text` safe inside an element or a quoted attribute. What workers report is another process's word: every
    /// name, message and id goes through here, control characters shown as `\u{…}`.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            case "\n", "\t": escaped.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    escaped += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped
    }

    /// `text` as a query-string value.
    static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryValue) ?? ""
    }

    private static let queryValue: CharacterSet = {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<"\u{80}"))
        allowed.insert(charactersIn: "-._~")
        return allowed
    }()

    /// A link to a job's page.
    static func jobLink(_ id: String) -> String {
        "<a class=\"mono\" href=\"/job?id=\(query(id))\">\(escape(id))</a>"
    }

    /// `2.5s` (under 10 s), `42s`, `3m12s`, `2h5m`, `3d4h`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 3_153_600_000 else { return seconds > 0 ? ">100y" : "?" }
        if seconds < 10 { return "\((seconds * 10).rounded(.down) / 10)s" }
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m\(total % 60)s" }
        if total < 86_400 { return "\(total / 3600)h\(total % 3600 / 60)m" }
        return "\(total / 86_400)d\(total % 86_400 / 3600)h"
    }

    /// A rate per second, to two significant places: `0`, `0.05`, `1.3`, `42`.
    static func rate(_ perSecond: Double) -> String {
        guard perSecond.isFinite, perSecond > 0 else { return "0" }
        if perSecond >= 10 { return String(Int(perSecond.rounded())) }
        if perSecond >= 1 { return String(format: "%.1f", perSecond) }
        return String(format: "%.2f", perSecond)
    }

    /// An instant as `2026-12-05 07:59:12Z`.
    static func time(_ date: Date?) -> String {
        guard let date else { return "–" }
        var text = date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
        text = text.replacingOccurrences(of: "T", with: " ")
        return text
    }

    /// A native progress bar (no inline style, which the page's content security policy forbids), with the
    /// percentage beside it.
    static func progress(_ fraction: Double?, message: String? = nil) -> String {
        guard let fraction, fraction.isFinite else { return "<span class=\"muted\">–</span>" }
        let clamped = min(max(fraction, 0), 1)
        let percent = Int((clamped * 100).rounded(.down))
        var text = "<progress max=\"1\" value=\"\(clamped)\">\(percent)%</progress> \(percent)%"
        if let message, !message.isEmpty { text += " <span class=\"muted\">\(escape(message))</span>" }
        return text
    }

    /// A form that posts an action, with the page's anti-forgery token, asking for confirmation first.
    /// - Parameters:
    ///   - fields: Hidden fields, by name.
    ///   - confirm: The question the page asks before it posts.
    static func actionForm(
        _ action: String, label: String, fields: [(String, String)], confirm: String, token: String,
        returnTo: String, style: String = "", extra: String = ""
    ) -> String {
        var form =
            "<form class=\"inline\" method=\"post\" action=\"/actions/\(action)\" data-confirm=\"\(escape(confirm))\">"
        form += "<input type=\"hidden\" name=\"csrf\" value=\"\(token)\">"
        form += "<input type=\"hidden\" name=\"return\" value=\"\(escape(returnTo))\">"
        for (name, value) in fields {
            form += "<input type=\"hidden\" name=\"\(name)\" value=\"\(escape(value))\">"
        }
        form += extra
        form += "<button type=\"submit\" class=\"\(style)\">\(escape(label))</button></form>"
        return form
    }
}
