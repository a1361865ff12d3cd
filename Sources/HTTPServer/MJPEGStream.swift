import Hub
import Hummingbird
import HummingbirdCore
import NIOCore

/// `/stream.mjpg`: the recording's pictures as `multipart/x-mixed-replace`, framed as mjpg-streamer and
/// µStreamer frame them (OctoPrint, crowsnest for Mainsail and Fluidd, Home Assistant's MJPEG camera and
/// a browser's `<img>` read that): the boundary `boundarydonotcross` right after the head, then for each
/// picture its part headers (`Content-Type: image/jpeg`, `Content-Length`, `X-Timestamp`, and
/// `X-Camrec-Frame`, the source frame number) and the JPEG, each followed by the next boundary, so a
/// client shows a picture as soon as it has it.
///
/// Each viewer is a reader of the `JPEGFeed`, holding the one picture it is sending; one that cannot
/// take a picture within `stallSeconds` is dropped (its connection closed).
enum MJPEGStream {
    static let boundary = "boundarydonotcross"
    static let contentType = "multipart/x-mixed-replace;boundary=\(boundary)"
    static let stallSeconds: UInt64 = 5
    /// The highest `?fps=` taken.
    static let maximumRate = 1000.0

    /// The rate a viewer asks for with `?fps=` (nil: every picture), or why it is refused (one line).
    static func rate(query: Substring?) -> Result<Double?, HTTPError> {
        guard let text = query else { return .success(nil) }
        guard let rate = Double(text), rate.isFinite, rate > 0, rate <= maximumRate else {
            return .failure(HTTPError(.badRequest, message: "fps: a number of pictures a second above 0 and at most \(Int(maximumRate)), not \"\(text.prefix(40))\""))
        }
        return .success(rate)
    }

    /// The response: the parts, until the feed ends, the viewer leaves or stops reading. The writer
    /// stays in the task Hummingbird gave it to; a part's deadline beside it closes `connection`.
    static func response(feed: JPEGFeed, framesPerSecond: Double?, connection: any Channel) -> Response {
        Response(status: .ok, headers: [.contentType: contentType, .cacheControl: "no-store, no-cache, must-revalidate, max-age=0",
                                        HTTPFields.Element.Name("Pragma")!: "no-cache"],
                 body: ResponseBody { writer in
            guard let reader = feed.join(framesPerSecond: framesPerSecond) else { return try await writer.finish(nil) }
            defer { feed.leave(reader) }
            var part = ByteBuffer()
            part.reserveCapacity(256 * 1024)
            part.writeString("--\(boundary)\r\n")
            try await write(part, to: &writer, closingOnStall: connection)
            while let picture = await reader.next() {
                part.clear()
                writeHead(of: picture, into: &part)
                part.writeBytes(picture.jpeg)
                part.writeStaticString("\r\n--")
                part.writeStaticString("boundarydonotcross")
                part.writeStaticString("\r\n")
                try await write(part, to: &writer, closingOnStall: connection)
            }
            try await writer.finish(nil)
        })
    }

    /// Writes `part` in this task, or ends the response when it has not gone within `stallSeconds` (the
    /// viewer stopped reading): the deadline, a child task, closes the connection, which fails the write.
    private static func write(_ part: ByteBuffer, to writer: inout any ResponseBodyWriter, closingOnStall connection: any Channel) async throws {
        try await withThrowingTaskGroup(of: Void.self) { deadline in
            deadline.addTask {
                try await Task.sleep(for: .seconds(stallSeconds))  // a deadline, not a poll: cancelled once the part went
                connection.close(promise: nil)
            }
            defer { deadline.cancelAll() }
            try await writer.write(part)
        }
    }

    /// A part's headers, written without making a String per picture.
    static func writeHead(of picture: JPEGFeed.Picture, into part: inout ByteBuffer) {
        part.writeStaticString("Content-Type: image/jpeg\r\nContent-Length: ")
        writeDecimal(UInt64(picture.count), into: &part)
        part.writeStaticString("\r\nX-Timestamp: ")
        writeDecimal(picture.presentationTimeNanoseconds / 1_000_000_000, into: &part)
        part.writeStaticString(".")
        let micro = picture.presentationTimeNanoseconds % 1_000_000_000 / 1_000
        var scale: UInt64 = 100_000
        while scale > 1, micro < scale {
            part.writeInteger(UInt8(ascii: "0"))
            scale /= 10
        }
        writeDecimal(micro, into: &part)
        part.writeStaticString("\r\nX-Camrec-Frame: ")
        writeDecimal(picture.sequence, into: &part)
        part.writeStaticString("\r\n\r\n")
    }

    static func writeDecimal(_ value: UInt64, into part: inout ByteBuffer) {
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            part.writeInteger(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}
