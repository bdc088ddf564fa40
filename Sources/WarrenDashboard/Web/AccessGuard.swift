import Foundation
import HTTPTypes
import Hummingbird

/// Lets in the requests the dashboard should answer: with a credential configured, only those that carry it (HTTP
/// basic auth with any user name, or a bearer token); and only same-origin posts, so that another site cannot make
/// a logged-in browser cancel jobs.
///
/// Thread safety: immutable.
struct AccessGuard<Context: RequestContext>: RouterMiddleware {
    /// The secret, or `nil` when the dashboard listens on loopback without one.
    let credential: String?

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let credential, !Self.carries(credential, request.headers[.authorization]) {
            return Response(
                status: .unauthorized,
                headers: [
                    .wwwAuthenticate: "Basic realm=\"warren dashboard\", charset=\"UTF-8\"",
                    .contentType: "text/plain; charset=utf-8",
                ],
                body: .init(byteBuffer: ByteBuffer(string: "A credential is required.\n")))
        }
        if request.method == .post, let problem = Self.crossSiteProblem(request) {
            return Response(
                status: .forbidden, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "Refused: \(problem).\n")))
        }
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] =
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; "
            + "form-action 'self'; base-uri 'none'"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return response
    }

    /// Whether `authorization` carries `credential`: `Basic` with it as the password (any user name) or `Bearer`.
    static func carries(_ credential: String, _ authorization: String?) -> Bool {
        guard let authorization else { return false }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return false }
        switch parts[0].lowercased() {
        case "bearer":
            return constantTimeEqual(String(parts[1]), credential)
        case "basic":
            guard let data = Data(base64Encoded: String(parts[1])) else { return false }
            let pair = String(decoding: data, as: UTF8.self)
            guard let colon = pair.firstIndex(of: ":") else { return false }
            return constantTimeEqual(String(pair[pair.index(after: colon)...]), credential)
        default:
            return false
        }
    }

    /// Why a post comes from another site, or `nil`: browsers name where a request comes from in `Sec-Fetch-Site`,
    /// and in `Origin`, which must then name this host. Posts must also carry the page's token (checked by the
    /// action).
    static func crossSiteProblem(_ request: Request) -> String? {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" {
            return "a post from another site (\(site))"
        }
        if let origin = request.headers[.origin] {
            guard let authority = request.head.authority, let url = URL(string: origin), let host = url.host else {
                return "a post whose origin is unreadable"
            }
            let named = url.port.map { "\(host):\($0)" } ?? host
            if named != authority && "[\(host)]:\(url.port ?? 80)" != authority { return "a post from \(origin)" }
        }
        return nil
    }

    /// Compares without stopping at the first difference, so that timing tells nothing of the secret.
    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        var difference = UInt8(left.count == right.count ? 0 : 1)
        for index in 0..<max(left.count, right.count) {
            difference |= (index < left.count ? left[index] : 0) ^ (index < right.count ? right[index] : 0)
        }
        return difference == 0
    }
}
