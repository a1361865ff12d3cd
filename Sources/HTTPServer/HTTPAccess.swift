import ExtrasBase64
import Glibc
import Hummingbird
import NetStream

/// Who may use the web server: anyone who can reach it (loopback, or `--http-insecure`), or only a
/// browser that sends the one user name and password of `--http-auth-file` (HTTP Basic; browsers
/// ask for it once and send it with the WebSocket too).
public struct HTTPAccess: Sendable {
    /// `Basic base64(user:password)`: the whole Authorization header a browser must send.
    let expectedAuthorization: [UInt8]?

    public static let open = HTTPAccess(expectedAuthorization: nil)

    public typealias LoadError = Credentials.LoadError

    /// Reads `user:password` from the first line of `path` (see `Credentials.load`).
    public static func load(authFile path: String) throws -> HTTPAccess {
        let credentials = try Credentials.load(path: path)
        let pair = credentials.user + ":" + credentials.password
        return HTTPAccess(expectedAuthorization: Array(("Basic " + Base64.encodeToString(bytes: Array(pair.utf8))).utf8))
    }

    /// True for the loopback addresses, where only this machine's users can connect.
    public static func isLoopback(host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    func allows(_ request: Request) -> Bool {
        guard let expected = expectedAuthorization else { return true }
        guard let given = request.headers[.authorization] else { return false }
        // Compared in time that does not depend on where they differ.
        let bytes = Array(given.utf8)
        var difference = bytes.count ^ expected.count
        for index in expected.indices { difference |= Int(expected[index] ^ (index < bytes.count ? bytes[index] : 0)) }
        return difference == 0
    }
}

/// Answers 401 to every request without the right credentials.
struct HTTPAccessMiddleware<Context: RequestContext>: RouterMiddleware {
    let access: HTTPAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard access.allows(request) else {
            return Response(status: .unauthorized, headers: [.wwwAuthenticate: "Basic realm=\"camrec\", charset=\"UTF-8\""])
        }
        return try await next(request, context)
    }
}
