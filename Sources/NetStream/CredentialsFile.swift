import Glibc
import SystemSupport

/// The one user name and password of `--http-auth-file` (its first line, `user:password`), which the
/// HTTP server (Basic) and the RTSP server (Digest and Basic) both ask for.
public struct Credentials: Sendable, Equatable {
    public let user: String
    public let password: String

    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads `user:password` from the first line of `path` (at most 4 KiB; the password may hold ':').
    /// Only a regular file: a FIFO or a device would block or never end.
    public static func load(path: String) throws(LoadError) -> Credentials {
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
        var text = String(cBuffer: line)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex else {
            throw LoadError(description: "\(path): the first line must be user:password (both not empty)")
        }
        return Credentials(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }
}
