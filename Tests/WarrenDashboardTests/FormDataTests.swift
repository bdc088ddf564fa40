import Testing

@testable import WarrenDashboard

@Suite struct FormDataTests {
    @Test func decodesRepeatedAndEncodedFields() {
        let form = FormData("job=a%3A1&job=b+c&csrf=00&empty=&bare")
        #expect(form.all("job") == ["a:1", "b c"])
        #expect(form["csrf"] == "00")
        #expect(form["empty"] == "")
        #expect(form["bare"] == "")
        #expect(form["missing"] == nil)
        #expect(form.first["job"] == "a:1")
    }

    @Test func badPercentEncodingDropsTheFieldOnly() {
        let form = FormData("a=%zz&b=2")
        #expect(form["a"] == nil)
        #expect(form["b"] == "2")
    }

    @Test func actionsReturnOnlyToThisDashboard() {
        #expect(DashboardRoutes.returnPath("/jobs?page=2") == "/jobs?page=2")
        #expect(DashboardRoutes.returnPath("//evil.example/") == "/")
        #expect(DashboardRoutes.returnPath("https://evil.example/") == "/")
        #expect(DashboardRoutes.returnPath("/\\evil.example") == "/")
        #expect(DashboardRoutes.returnPath(nil) == "/")
    }
}
