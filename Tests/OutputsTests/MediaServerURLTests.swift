import Libav
import Outputs
import XCTest

/// Media-server URLs: what is accepted, what is refused with a usage message, and that no secret
/// survives in what camrec or libavformat prints.
final class MediaServerURLTests: XCTestCase {
    func testAcceptsEachProtocolAndKeepsTheURLWholeForLibavformat() throws {
        let rtmp = try MediaServerURL("rtmp://user:pass@cam.local:1936/live/cam?token=abc")
        XCTAssertEqual(rtmp.kind, .rtmp)
        XCTAssertEqual(rtmp.host, "cam.local")
        XCTAssertEqual(rtmp.port, 1936)
        XCTAssertEqual(rtmp.url, "rtmp://user:pass@cam.local:1936/live/cam?token=abc")
        XCTAssertEqual(rtmp.kind.muxer, "flv")
        let rtsp = try MediaServerURL("RTSP://[::1]:8554/cam")
        XCTAssertEqual(rtsp.kind, .rtsp)
        XCTAssertEqual(rtsp.host, "::1")
        XCTAssertEqual(rtsp.port, 8554)
        XCTAssertEqual(rtsp.kind.muxer, "rtsp")
        let srt = try MediaServerURL("srt://10.0.0.2:9000?streamid=publish:cam")
        XCTAssertEqual(srt.kind, .srt)
        XCTAssertEqual(srt.port, 9000)
        XCTAssertEqual(srt.kind.muxer, "mpegts")
    }

    func testRefusesMalformedURLsWithoutEchoingTheirSecrets() {
        let bad = [
            "rtmp://127.0.0.1": "needs a path",
            "rtmp://u:pw-secret@127.0.0.1/": "needs a path",
            "srt://127.0.0.1": "needs a port",
            "rtsp://127.0.0.1:70000/cam": "1 to 65535",
            "rtsp://127.0.0.1:0/cam": "1 to 65535",
            "rtsp://127.0.0.1:8554": "path to publish to",
            "rtsp://[::1/cam": "closing ]",
            "rtmp://:1935/live/cam": "host",
            "rtmp://host/live/cam with space": "no spaces",
            "http://host/x": "starts with rtsp://",
        ]
        for (text, reason) in bad {
            do {
                _ = try MediaServerURL(text)
                XCTFail("\(text) was accepted")
            } catch {
                XCTAssertTrue(error.description.contains(reason), "\(text): \(error.description)")
                XCTAssertFalse(error.description.contains("pw-secret"), "\(text): \(error.description)")
            }
        }
    }

    func testRedactedHidesUserInfoAndEveryQueryValue() throws {
        let url = try MediaServerURL("srt://u:p@10.0.0.2:9000?passphrase=verysecret&streamid=private&latency=200")
        XCTAssertEqual(url.redacted, "srt://***@10.0.0.2:9000?passphrase=***&streamid=***&latency=***")
        XCTAssertEqual(url.description, url.redacted)
        XCTAssertEqual(try MediaServerURL("rtmp://host/live/cam").redacted, "rtmp://host/live/cam")
    }

    /// libavformat's own lines go through the C filter: every URL in a line, a user name with an
    /// @ in it, empty and one-byte values (which grow to ***), text around the URLs kept.
    func testLibavLinesAreRedactedInC() {
        let cases = [
            "Connection to srt://10.0.0.2:9000?passphrase=abc&streamid=x failed: Input/output error":
                "Connection to srt://10.0.0.2:9000?passphrase=***&streamid=*** failed: Input/output error",
            "Opening 'rtmp://a:b@h/live/cam?t=1' and rtsp://user:pw@h:554/p for writing":
                "Opening 'rtmp://***@h/live/cam?t=***' and rtsp://***@h:554/p for writing",
            "rtmp://me@corp:p@ss@h/app/s": "rtmp://***@h/app/s",
            "rtmp://@h/app/s and srt://h:1?x=\"y\"": "rtmp://***@h/app/s and srt://h:1?x=***\"y\"",
            "tcp://h:1?a=&b=2&flag": "tcp://h:1?a=***&b=***&flag",
            "no url here": "no url here",
        ]
        for (line, want) in cases {
            XCTAssertEqual(LibavLogging.redactURLs(line), want, line)
        }
    }
}
