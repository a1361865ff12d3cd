import XCTest

@testable import RTSP

/// The request and interleaved-frame parser: the same messages however the bytes are cut, and every bound.
final class RTSPMessageParserTests: XCTestCase {
    private let options = "OPTIONS rtsp://127.0.0.1:8554/ RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: test\r\n\r\n"
    private let interleaved: [UInt8] = [0x24, 1, 0, 5, 0x80, 201, 0, 1, 9]
    private let setParameter = "SET_PARAMETER rtsp://127.0.0.1:8554/ RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 5\r\nSession: AB12\r\n\r\nhello"
    private let describe = "DESCRIBE rtsp://127.0.0.1:8554/h264 RTSP/1.0\nCSeq: 3\nAccept: application/sdp\n\n"

    private var stream: [UInt8] { Array(options.utf8) + interleaved + Array(setParameter.utf8) + Array(describe.utf8) }

    private var expected: [RTSPInbound] {
        [
            .request(RTSPRequest(method: "OPTIONS", uri: "rtsp://127.0.0.1:8554/", headers: [("CSeq", "1"), ("User-Agent", "test")])),
            .interleaved(channel: 1, payload: [0x80, 201, 0, 1, 9]),
            .request(RTSPRequest(method: "SET_PARAMETER", uri: "rtsp://127.0.0.1:8554/",
                                 headers: [("CSeq", "2"), ("Content-Length", "5"), ("Session", "AB12")], body: Array("hello".utf8))),
            .request(RTSPRequest(method: "DESCRIBE", uri: "rtsp://127.0.0.1:8554/h264", headers: [("CSeq", "3"), ("Accept", "application/sdp")])),
        ]
    }

    private func parse(_ pieces: [[UInt8]]) throws -> [RTSPInbound] {
        var parser = RTSPMessageParser()
        var got: [RTSPInbound] = []
        for piece in pieces { try parser.feed(piece) { got.append($0) } }
        XCTAssertEqual(parser.heldBytes, 0)
        return got
    }

    func testOneByteAtATimeAllAtOnceAndMessageByMessageGiveTheSameMessages() throws {
        XCTAssertEqual(try parse([stream]), expected)
        XCTAssertEqual(try parse(stream.map { [$0] }), expected)
        XCTAssertEqual(try parse([Array(options.utf8), interleaved, Array(setParameter.utf8), Array(describe.utf8)]), expected)
        // Cut in the middle of the blank line, the interleaved header and the body.
        let cuts = [options.utf8.count - 1, options.utf8.count + 2, options.utf8.count + interleaved.count + setParameter.utf8.count - 2]
        var pieces: [[UInt8]] = []
        var from = 0
        for cut in cuts + [stream.count] {
            pieces.append(Array(stream[from..<cut]))
            from = cut
        }
        XCTAssertEqual(try parse(pieces), expected)
    }

    func testHeaderNamesAreFoundWithoutCaseAndFoldedLinesContinue() throws {
        let text = "PLAY rtsp://h/ RTSP/1.0\r\ncseq: 7\r\nSession: 12;\r\n timeout=60\r\n\r\n"
        let got = try parse([Array(text.utf8)])
        guard case .request(let request) = got.first else { return XCTFail("no request") }
        XCTAssertEqual(request.cseq, "7")
        XCTAssertEqual(request.header("SESSION"), "12; timeout=60")
    }

    func testAHeadOver8KiBIsRefusedAndNeverHeldBeyondIt() {
        var parser = RTSPMessageParser()
        let head = Array("DESCRIBE rtsp://h/ RTSP/1.0\r\nCSeq: 1\r\nX-Pad: ".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 9000)
        var thrown: RTSPParseError?
        for byte in head {
            do { try parser.feed([byte]) { _ in } } catch { thrown = error as? RTSPParseError; break }
            XCTAssertLessThanOrEqual(parser.heldBytes, 8192 + 4)
        }
        XCTAssertEqual(thrown, .headTooLarge)
        // After an error nothing more is taken.
        XCTAssertThrowsError(try parser.feed(Array(options.utf8)) { _ in })
        // Just under the bound is a request.
        let fits = "DESCRIBE rtsp://h/ RTSP/1.0\r\nCSeq: 1\r\nX-Pad: "
        let padding = String(repeating: "a", count: 8192 - fits.utf8.count - 2)
        XCTAssertEqual(try parse([Array((fits + padding + "\r\n\r\n").utf8)]).count, 1)
    }

    func testSixtyFourHeaderLinesPassAndSixtyFiveAreRefused() throws {
        func request(lines: Int) -> [UInt8] {
            Array(("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n" + (1..<lines).map { "X-\($0): y\r\n" }.joined() + "\r\n").utf8)
        }
        XCTAssertEqual(try parse([request(lines: 64)]).count, 1)
        var parser = RTSPMessageParser()
        XCTAssertThrowsError(try parser.feed(request(lines: 65)) { _ in }) { XCTAssertEqual($0 as? RTSPParseError, .tooManyHeaderLines) }
    }

    func testBodiesAreCappedAndContentLengthMustBeANumber() throws {
        var parser = RTSPMessageParser()
        let big = "SET_PARAMETER * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 16385\r\n\r\n"
        XCTAssertThrowsError(try parser.feed(Array(big.utf8)) { _ in }) { XCTAssertEqual($0 as? RTSPParseError, .badContentLength) }
        var other = RTSPMessageParser()
        XCTAssertThrowsError(try other.feed(Array("GET_PARAMETER * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: -1\r\n\r\n".utf8)) { _ in })
        let atCap = "SET_PARAMETER * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 16384\r\n\r\n" + String(repeating: "b", count: 16384)
        let got = try parse([Array(atCap.utf8)])
        guard case .request(let request) = got.first else { return XCTFail("no request") }
        XCTAssertEqual(request.body.count, 16384)
    }

    func testMalformedRequestLinesAndHeadersAreRefused() {
        for text in ["GET / HTTP/1.1\r\n\r\n", "OPTIONS\r\n\r\n", "OPTIONS * RTSP/1.0 extra\r\n\r\n", "options * RTSP/1.0\r\n\r\n",
                     "OPTIONS * RTSP/1.0\r\nno colon here\r\n\r\n", "OPTIONS * RTSP/1.0\r\n: empty name\r\n\r\n", "\u{01}\u{02}\r\n\r\n"] {
            var parser = RTSPMessageParser()
            XCTAssertThrowsError(try parser.feed(Array(text.utf8)) { _ in }, text) { error in
                guard case .malformed = error as? RTSPParseError else { return XCTFail("\(text): \(error)") }
            }
        }
    }

    func testInterleavedFramesOfAnyLengthUpTo64KiBAreWholeWhateverTheCuts() throws {
        let payload = (0..<65535).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let frame: [UInt8] = [0x24, 3, 0xFF, 0xFF] + payload
        var pieces: [[UInt8]] = []
        var from = 0
        while from < frame.count {
            let size = min(frame.count - from, 1 + from % 4093)
            pieces.append(Array(frame[from..<from + size]))
            from += size
        }
        XCTAssertEqual(try parse(pieces), [.interleaved(channel: 3, payload: payload)])
        XCTAssertEqual(try parse([[0x24, 0, 0, 0]]), [.interleaved(channel: 0, payload: [])])
    }

    func testTransportOffersAndPaths() {
        XCTAssertEqual(RTSPTransport.choose(from: "RTP/AVP/TCP;unicast;interleaved=0-1"), .interleaved(rtp: 0, rtcp: 1))
        XCTAssertEqual(RTSPTransport.choose(from: "RTP/AVP;unicast;client_port=5000-5001"), .udp(clientRTP: 5000, clientRTCP: 5001))
        XCTAssertEqual(RTSPTransport.choose(from: "RTP/AVP/UDP;unicast;client_port=6000"), .udp(clientRTP: 6000, clientRTCP: 6001))
        // GStreamer's list: the first it can serve.
        XCTAssertEqual(RTSPTransport.choose(from: "RTP/AVP;multicast;port=5000-5001,RTP/AVP/TCP;unicast;interleaved=2-3"),
                       .interleaved(rtp: 2, rtcp: 3))
        XCTAssertNil(RTSPTransport.choose(from: "RTP/AVP;multicast"))
        XCTAssertNil(RTSPTransport.choose(from: "RTP/AVP;unicast;client_port=70000-70001"))
        XCTAssertNil(RTSPTransport.choose(from: "RAW/RAW/UDP;unicast;client_port=1-2"))
        XCTAssertEqual(rtspPath(of: "rtsp://127.0.0.1:8554/h264/trackID=0")?.path, "/h264")
        XCTAssertEqual(rtspPath(of: "rtsp://127.0.0.1:8554/h264/trackID=0")?.track, 0)
        XCTAssertEqual(rtspPath(of: "rtsp://[::1]:8554/")?.path, "/")
        XCTAssertEqual(rtspPath(of: "rtsp://host:8554")?.path, "/")
        XCTAssertEqual(rtspPath(of: "rtsp://host:8554/trackID=0")?.path, "/")
        XCTAssertNil(rtspPath(of: "*"))
    }
}
