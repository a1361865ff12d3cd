import Glibc
import Hummingbird
import NIOCore

extension RecordingShelf {
    /// `GET /recordings/N/NAME`: a listed file, whole or one byte range (for seeking in `<video>`);
    /// `?download` asks the browser to save it. Anything not on the list is 404, whatever the spelling.
    func response(to request: Request) throws -> Response {
        let prefix = "/recordings/"
        let path = request.uri.path
        guard path.hasPrefix(prefix) else { throw notFound }
        let rest = path.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), let index = Int(rest[..<slash]),
              let name = Self.percentDecoded(rest[rest.index(after: slash)...]), !name.isEmpty,
              let opened = open(shelfIndex: index, name: name)
        else { throw notFound }
        let file = OpenFile(opened.descriptor)
        let size = opened.bytes
        var first = 0, last = size - 1
        var headers: HTTPFields = [.contentType: opened.contentType, .acceptRanges: "bytes", .cacheControl: "no-store"]
        var status = HTTPResponse.Status.ok
        if let range = request.headers[.range] {
            guard let wanted = Self.byteRange(range, size: size) else {
                throw HTTPError(.rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)"],
                                message: "the range \(range) is not within the file's \(size) bytes")
            }
            (first, last) = wanted
            status = .partialContent
            headers[.contentRange] = "bytes \(first)-\(last)/\(size)"
        }
        if request.uri.queryParameters["download"] != nil {
            let base = name.split(separator: "/").last.map(String.init) ?? name
            headers[.contentDisposition] = "attachment; filename=\"\(base.filter { $0 != "\"" && $0 != "\\" })\""
        }
        let length = max(0, last - first + 1)
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: length) { [first, last] writer in
            var offset = first
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while offset <= last {
                let want = min(chunk.count, last - offset + 1)
                let got = chunk.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, want, off_t(offset)) }
                // A file cut short since it was listed: the response ends early and the connection closes.
                guard got > 0 else { throw HTTPError(.internalServerError) }
                try await writer.write(ByteBuffer(bytes: chunk[0..<got]))
                offset += got
            }
            try await writer.finish(nil)
        })
    }

    private var notFound: HTTPError { HTTPError(.notFound, message: "no such recording; GET /api/recordings lists them") }

    /// One range of `Range: bytes=A-B`, `A-` or `-N`; nil when malformed, several, or outside the file.
    static func byteRange(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), !header.contains(","), size > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let start = spec[..<dash].filter { $0 != " " }, end = spec[spec.index(after: dash)...].filter { $0 != " " }
        if start.isEmpty {
            guard let suffix = Int(end), suffix > 0 else { return nil }
            return (max(0, size - suffix), size - 1)
        }
        guard let a = Int(start), a >= 0, a < size else { return nil }
        if end.isEmpty { return (a, size - 1) }
        guard let b = Int(end), b >= a else { return nil }
        return (a, min(b, size - 1))
    }
}

/// Closes its descriptor when the response is done with it, however it ends.
private final class OpenFile: Sendable {
    let descriptor: Int32
    init(_ descriptor: Int32) { self.descriptor = descriptor }
    deinit { close(descriptor) }
}
