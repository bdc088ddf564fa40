import Testing

@testable import WarrenDashboard

@Suite struct HTMLTests {
    @Test func escapesMarkupAndControlCharacters() {
        #expect(HTML.escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        #expect(HTML.escape("bell\u{7}") == "bell\\u{7}")
    }
}
