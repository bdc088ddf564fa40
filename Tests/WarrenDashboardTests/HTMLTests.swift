import Testing

@testable import WarrenDashboard

@Suite struct HTMLTests {
    @Test func escapesMarkupAndControlCharacters() {
        #expect(HTML.escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        #expect(HTML.escape("bell\u{7}") == "bell\\u{7}")
    }

    @Test func queryValuesAreFullyEncoded() {
        #expect(HTML.query("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9")
    }

    @Test func durationsAndRates() {
        #expect(HTML.duration(2.56) == "2.5s")
        #expect(HTML.duration(192) == "3m12s")
        #expect(HTML.duration(.infinity) == ">100y")
        #expect(HTML.rate(0) == "0")
        #expect(HTML.rate(0.049) == "0.05")
        #expect(HTML.rate(42.4) == "42")
    }

    @Test func progressClampsAndNeedsNoInlineStyle() {
        #expect(HTML.progress(1.7).contains("value=\"1.0\""))
        #expect(!HTML.progress(0.5).contains("style="))
        #expect(HTML.progress(nil).contains("–"))
    }

    @Test func pagerKeepsTheFilters() {
        let pager = Layout.pager(
            total: 120, page: 2, size: 50, path: "/results", query: [("status", "failed"), ("page", "2")])
        #expect(pager.contains("Page 2 of 3"))
        #expect(pager.contains("/results?status=failed&amp;page=1"))
        #expect(pager.contains("/results?status=failed&amp;page=3"))
        #expect(Layout.pager(total: 10, page: 1, size: 50, path: "/", query: []).isEmpty)
    }
}
