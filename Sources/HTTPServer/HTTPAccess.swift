import ExtrasBase64
import Glibc
import Hummingbird

/// Who may use the web server: anyone who can reach it (loopback, or `--http-insecure`), or only a
/// browser that sends the one user name and password of `--http-auth-file` (HTTP Basic; browsers
/// ask for it once and send it with the WebSocket too).
public struct HTTPAccess: Sendable {
    /// `Basic base64(user:password)`: the whole Authorization header a browser must send.
    let expectedAuthorization: [UInt8]?

    public static let open = HTTPAccess(expectedAuthorization: nil)

    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads `user:password` from the first line of `path` (at most 4 KiB; the password may hold ':').
    /// Only a regular file: a FIFO or a device would block or never end.
    public static func load(authFile path: String) throws -> HTTPAccess {
        let descriptor = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw LoadError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            throw LoadError(description: "\(path) is not a regular file: write user:password into a file")
        }
        guard let file = fdopen(descriptor, "r") else {
            Glibc.close(descriptor)
            throw LoadError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 4096)
        guard fgets(&line, Int32(line.count), file) != nil else {
            throw LoadError(description: "\(path) is empty: write one line user:password")
        }
        var text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex else {
            throw LoadError(description: "\(path): the first line must be user:password (both not empty)")
        }
        return HTTPAccess(expectedAuthorization: Array(("Basic " + Base64.encodeToString(bytes: Array(text.utf8))).utf8))
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
