import Foundation
import Hummingbird
import Warren

/// The pages, the assets and the actions, on a Hummingbird router.
///
/// Thread safety: immutable; the monitor, the feed and the actions it holds are locked or confined.
struct DashboardRoutes: Sendable {
    let monitor: FleetMonitor
    let feed: ResultFeed
    let actions: FleetActions
    /// The anti-forgery token: random per process, carried by every form.
    let token: String
    let schedules: [Schedule]
    let scheduleFile: String?

    func add(to router: Router<BasicRequestContext>) {
        router.get("/") { request, _ in html(OverviewPage.render(context(request))) }
        router.get("/jobs") { request, _ in html(JobsPage.render(context(request), query: query(request))) }
        router.get("/results") { request, _ in html(ResultsPage.render(context(request), query: query(request))) }
        router.get("/job") { request, _ in
            guard let id = query(request)["id"], !id.isEmpty else { throw HTTPError(.badRequest, message: "no job id") }
            return html(JobPage.render(context(request), id: id, dead: monitor.deadLetters().letters))
        }
        router.get("/dead") { request, _ in
            html(DeadLettersPage.render(context(request), listing: monitor.deadLetters(), query: query(request)))
        }
        router.get("/schedules") { request, _ in
            html(
                SchedulesPage.render(
                    context(request), schedules: schedules, file: scheduleFile, leader: monitor.schedulerLeader()))
        }
        router.get("/live.json") { _, _ in live() }
        router.get("/assets/app.css") { _, _ in asset(Assets.css, type: "text/css; charset=utf-8") }
        router.get("/assets/app.js") { _, _ in asset(Assets.javascript, type: "text/javascript; charset=utf-8") }
        router.get("/assets/icon.svg") { _, _ in asset(Assets.icon, type: "image/svg+xml") }
        router.post("/actions/:action") { request, context in
            try await act(context.parameters.require("action"), request: request)
        }
    }

    private func query(_ request: Request) -> [String: String] {
        FormData(request.uri.query ?? "").first
    }

    private func context(_ request: Request, notice: String? = nil) -> PageContext {
        let path = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        return PageContext(
            fleet: monitor.current, feed: feed.current, token: token, path: path,
            notice: notice ?? query(request)["notice"])
    }

    private func html(_ text: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    private func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "max-age=300"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The fleet's rates over the last 10 seconds, for the Overview's chart.
    private func live() -> Response {
        let now = Date()
        let rates = feed.current.throughput.rates(over: 10, now: now)
        let fleet = monitor.current
        let text = """
            {"at":\(now.timeIntervalSince1970),"started":\(rates.started),"succeeded":\(rates.succeeded),\
            "failed":\(rates.failed),"workers":\(fleet.workers.count),"brokerReachable":\(fleet.problem == nil)}
            """
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Runs a posted action once it carries the page's token and was confirmed, then sends the browser back where
    /// it came from with what it did. Unconfirmed (JavaScript off), it asks first on a page of its own.
    private func act(_ action: String, request: Request) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 1 << 20)
        let form = FormData(String(buffer: body))
        guard let sent = form["csrf"], AccessGuard<BasicRequestContext>.constantTimeEqual(sent, token) else {
            throw HTTPError(.forbidden, message: "the form is not one this dashboard served: reload the page")
        }
        let back = Self.returnPath(form["return"])
        guard form["confirmed"] == "yes" else {
            return html(ConfirmPage.render(action: action, form: form, context: context(request)))
        }
        let notice: String
        do {
            notice = try await perform(action, form)
            monitor.refresh()
        } catch let error as HTTPError {
            throw error
        } catch {
            notice = "Failed: \(FleetMonitor.describe(error))"
        }
        let separator = back.contains("?") ? "&" : "?"
        let location = back.replacingOccurrences(of: #"[?&]notice=[^&]*"#, with: "", options: .regularExpression)
        return .redirect(to: location + separator + "notice=" + HTML.query(notice), type: .found)
    }

    private func perform(_ action: String, _ form: FormData) async throws -> String {
        func required(_ name: String) throws -> String {
            guard let value = form[name], !value.isEmpty else { throw HTTPError(.badRequest, message: "no \(name)") }
            return value
        }
        let worker = form["worker"].flatMap { $0.isEmpty ? nil : $0 }
        let queue = form["queue"].flatMap { $0.isEmpty ? nil : $0 }
        switch action {
        case "cancel":
            if let key = form["key"], !key.isEmpty { return try await actions.cancel(key: key) }
            return try await actions.cancel(jobID: try required("job"))
        case "cancel-all": return try await actions.cancelAll(queue: try required("queue"))
        case "pause": return try await actions.pause(worker: worker, queue: queue)
        case "resume": return try await actions.resume(worker: worker, queue: queue)
        case "resize":
            guard let width = Int(try required("width")), LocalQueue.widths.contains(width) else {
                throw HTTPError(.badRequest, message: "width: expected \(LocalQueue.widths)")
            }
            return try await actions.resize(localQueue: try required("localQueue"), width: width, worker: worker)
        case "dead-requeue", "dead-delete":
            let ids = Set(form.all("job").filter { !$0.isEmpty })
            guard !ids.isEmpty else { return "No dead letter was ticked." }
            return action == "dead-requeue"
                ? try await actions.requeue(deadJobIDs: ids) : try await actions.delete(deadJobIDs: ids)
        default:
            throw HTTPError(.notFound, message: "no action \(action)")
        }
    }

    /// Where an action returns to: a path of this dashboard, never another site (`//host`), else the Overview.
    static func returnPath(_ path: String?) -> String {
        guard let path, path.hasPrefix("/"), !path.hasPrefix("//"), !path.contains("\\") else { return "/" }
        return path
    }
}
