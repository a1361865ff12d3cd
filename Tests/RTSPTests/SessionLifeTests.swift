import XCTest

@testable import RTSP

/// The 60 s session timeout's clock (RFC 2326 §12.37), on given times: what restarts it and what does not.
final class SessionLifeTests: XCTestCase {
    let second: UInt64 = 1_000_000_000
    /// An RR about `ssrc` (RFC 3550 §6.4.2): `fraction`/256 lost lately, `lost` in all, `jitter` in clock units.
    func receiverReport(ssrc: UInt32, fraction: UInt8, lost: Int32, jitter: UInt32) -> [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        let lost24 = UInt32(bitPattern: lost) & 0x00FF_FFFF
        return [0x81, 201, 0, 7] + be(0x1234) + be(ssrc) + [fraction] + Array(be(lost24).dropFirst()) + be(77) + be(jitter) + be(0) + be(0)
    }

    func testAUDPClientThatSendsOnlyReceiverReportsIsNeverTimedOut() {
        let start: UInt64 = 1_000 * second
        var life = SessionLife(timeoutSeconds: 60, now: start)
        // Three minutes with nothing but an RR every 5 s (what ffmpeg and GStreamer send over UDP).
        var now = start
        while now < start + 180 * second {
            now += 5 * second
            XCTAssertTrue(life.rtcp(receiverReport(ssrc: 9, fraction: 0, lost: 0, jitter: 10), ssrc: 9, at: now))
            XCTAssertFalse(life.expired(at: now + 59 * second), "at \((now - start) / second) s")
        }
        XCTAssertEqual(life.receiverReports, 36)
        XCTAssertTrue(life.expired(at: now + 61 * second), "60 s after the last RR")
    }

    func testGarbageOnTheRTCPPortIsCountedAndIsNoSignOfLife() {
        var life = SessionLife(timeoutSeconds: 60, now: 0)
        for t in stride(from: UInt64(10), through: 70, by: 10) {
            XCTAssertFalse(life.rtcp([0x16, 3, 1, 0, 5, 1, 2, 3, 4, 5], ssrc: 9, at: t * second))
        }
        // A length past the end, and more than a datagram can hold.
        XCTAssertFalse(life.rtcp(Array(receiverReport(ssrc: 9, fraction: 1, lost: 1, jitter: 1).prefix(20)), ssrc: 9, at: 71 * second))
        XCTAssertFalse(life.rtcp([UInt8](repeating: 0x80, count: 65_536), ssrc: 9, at: 72 * second))
        XCTAssertEqual(life.ignored, 9)
        XCTAssertEqual(life.receiverReports, 0)
        XCTAssertNil(life.newest)
        XCTAssertTrue(life.expired(at: 61 * second))
    }

    func testRequestsRestartTheClockAndALateReadIsNoExpiry() {
        var life = SessionLife(timeoutSeconds: 60, now: 100 * second)
        life.alive(at: 150 * second)
        XCTAssertFalse(life.expired(at: 209 * second))
        XCTAssertTrue(life.expired(at: 211 * second))
        // The watchdog read its time, then a request came on another thread: not an expiry (no wrap-around).
        life.alive(at: 300 * second)
        XCTAssertFalse(life.expired(at: 299 * second))
        // An older time never moves the clock back.
        life.alive(at: 200 * second)
        XCTAssertFalse(life.expired(at: 359 * second))
    }

    func testTheNewestBlockAboutThisStreamIsKept() {
        var life = SessionLife(timeoutSeconds: 60, now: 0)
        life.rtcp(receiverReport(ssrc: 9, fraction: 64, lost: 1234, jitter: 4500), ssrc: 9, at: second)
        // A block about another stream (another sender's SSRC) changes nothing kept.
        life.rtcp(receiverReport(ssrc: 8, fraction: 1, lost: 1, jitter: 1), ssrc: 9, at: 2 * second)
        XCTAssertEqual(life.newest, RTCP.ReceptionReport(ssrc: 9, fractionLost: 64, cumulativeLost: 1234, jitter: 4500))
        // Duplicates make the cumulative number negative (RFC 3550 §6.4.1): 24 bits, signed.
        life.rtcp(receiverReport(ssrc: 9, fraction: 0, lost: -3, jitter: 90), ssrc: 9, at: 3 * second)
        XCTAssertEqual(life.newest?.cumulativeLost, -3)
        XCTAssertEqual(life.receiverReports, 3)
    }

    func testMulticastIsChosenOnlyWhenConfigured() {
        let offer = "RTP/AVP;multicast;destination=224.1.1.1;port=5000-5001,RTP/AVP/TCP;unicast;interleaved=0-1"
        XCTAssertEqual(RTSPTransport.choose(from: offer), .interleaved(rtp: 0, rtcp: 1))
        XCTAssertEqual(RTSPTransport.choose(from: offer, multicast: true), .multicast)
        XCTAssertEqual(RTSPTransport.choose(from: "RTP/AVP/UDP;multicast", multicast: true), .multicast)
        XCTAssertNil(RTSPTransport.choose(from: "RTP/AVP/TCP;multicast", multicast: true))
    }
}
