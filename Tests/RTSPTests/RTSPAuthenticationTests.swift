import XCTest

@testable import RTSP

final class RTSPAuthenticationTests: XCTestCase {
    func testMD5KnownAnswers() {
        XCTAssertEqual(MD5.hex([]), "d41d8cd98f00b204e9800998ecf8427e")
        XCTAssertEqual(MD5.hex(Array("abc".utf8)), "900150983cd24fb0d6963f7d28e17f72")
        XCTAssertEqual(MD5.hex(Array("12345678901234567890123456789012345678901234567890123456789012345678901234567890".utf8)),
                       "57edf4a22be3c955ac49da2e2107b67a")
    }

    /// RFC 2617 §3.5's example, with qop=auth.
    func testDigestOfRFC2617sExample() {
        let auth = RTSPAuthentication(user: "Mufasa", password: "Circle Of Life", realm: "testrealm@host.com")
        let header = "Digest username=\"Mufasa\", realm=\"testrealm@host.com\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", "
            + "uri=\"/dir/index.html\", qop=auth, nc=00000001, cnonce=\"0a4f113b\", response=\"6629fae49393a05397450978507c4ef1\", "
            + "opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""
        XCTAssertTrue(auth.allows(authorization: header, method: "GET", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093"))
        XCTAssertFalse(auth.allows(authorization: header, method: "PLAY", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093"), "another method")
        XCTAssertFalse(auth.allows(authorization: header, method: "GET", nonce: "0000"), "another connection's nonce")
        let wrong = RTSPAuthentication(user: "Mufasa", password: "Circle of Life", realm: "testrealm@host.com")
        XCTAssertFalse(wrong.allows(authorization: header, method: "GET", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093"))
    }

    /// Without qop, as ffmpeg and live555 answer a challenge that offers none.
    func testDigestWithoutQopAndBasic() {
        let auth = RTSPAuthentication(user: "cam", password: "s3cret:x")
        let ha1 = MD5.hex(Array("cam:camrec:s3cret:x".utf8)), ha2 = MD5.hex(Array("DESCRIBE:rtsp://127.0.0.1:8554/".utf8))
        let response = MD5.hex(Array("\(ha1):n1:\(ha2)".utf8))
        let header = "Digest username=\"cam\", realm=\"camrec\", nonce=\"n1\", uri=\"rtsp://127.0.0.1:8554/\", response=\"\(response)\""
        XCTAssertTrue(auth.allows(authorization: header, method: "DESCRIBE", nonce: "n1"))
        XCTAssertFalse(auth.allows(authorization: header.replacingUsername("cat"), method: "DESCRIBE", nonce: "n1"))
        XCTAssertTrue(auth.allows(authorization: "Basic Y2FtOnMzY3JldDp4", method: "DESCRIBE", nonce: "n1"))
        XCTAssertFalse(auth.allows(authorization: "Basic Y2FtOnMzY3JldDp5", method: "DESCRIBE", nonce: "n1"))
        XCTAssertFalse(auth.allows(authorization: "Basic !!!", method: "DESCRIBE", nonce: "n1"))
        XCTAssertFalse(auth.allows(authorization: nil, method: "DESCRIBE", nonce: "n1"))
        XCTAssertFalse(auth.allows(authorization: "Bearer x", method: "DESCRIBE", nonce: "n1"))
        XCTAssertEqual(auth.challenges(nonce: "n1"), ["Digest realm=\"camrec\", nonce=\"n1\", algorithm=MD5", "Basic realm=\"camrec\""])
    }
}

private extension String {
    func replacingUsername(_ name: String) -> String {
        guard let range = firstRange(of: "username=\"cam\"") else { return self }
        var copy = self
        copy.replaceSubrange(range, with: "username=\"\(name)\"")
        return copy
    }
}
