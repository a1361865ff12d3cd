import Bitstream
import XCTest

@testable import RTSP

final class SessionDescriptionTests: XCTestCase {
    // libx264's SPS and PPS at 640x360, High profile, level 3.0 (from a camrec recording).
    private let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1E, 0xAC, 0xD9, 0x40, 0xA0, 0x2F, 0xF9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x3C, 0x0F, 0x16, 0x2D, 0x96]
    private let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]

    func testH264NamesPacketizationModeProfileAndParameterSets() throws {
        let au = [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1, 0x65, 0x88, 0x84]
        let sets = try XCTUnwrap(SessionDescription.parameterSets(inIDR: au, codec: .h264))
        XCTAssertEqual(sets, [sps, pps])
        let sdp = SessionDescription.make(codec: .h264, parameterSets: sets, sessionID: 1, serverAddress: "127.0.0.1", framesPerSecond: 30)
        XCTAssertTrue(sdp.contains("m=video 0 RTP/AVP 96\r\n"))
        XCTAssertTrue(sdp.contains("a=rtpmap:96 H264/90000\r\n"))
        XCTAssertTrue(sdp.contains("a=fmtp:96 packetization-mode=1;profile-level-id=64001E;sprop-parameter-sets=Z2QAHqzZQKAv+XARAAADAAEAAAMAPA8WLZY=,aOvjyyLA\r\n"), sdp)
        XCTAssertTrue(sdp.contains("a=control:trackID=0\r\n"))
        XCTAssertTrue(sdp.hasPrefix("v=0\r\n"))
        XCTAssertTrue(sdp.hasSuffix("\r\n"))
        // Before the first IDR: the SDP names no parameter sets (they come in-band).
        let bare = SessionDescription.make(codec: .h264, parameterSets: [], sessionID: 1, serverAddress: "127.0.0.1", framesPerSecond: nil)
        XCTAssertTrue(bare.contains("a=fmtp:96 packetization-mode=1\r\n"))
        XCTAssertNil(SessionDescription.parameterSets(inIDR: [0, 0, 0, 1] + sps + [0, 0, 0, 1, 0x65, 1], codec: .h264))
    }

    func testH265NamesVPSSPSAndPPS() throws {
        let vps: [UInt8] = [0x40, 0x01, 0x0C, 0x01], sps: [UInt8] = [0x42, 0x01, 0x01, 0x01], pps: [UInt8] = [0x44, 0x01, 0xC1, 0x72]
        let au = [0, 0, 0, 1] + vps + [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1, 0x26, 0x01, 0xAF]
        let sets = try XCTUnwrap(SessionDescription.parameterSets(inIDR: au, codec: .hevc))
        let sdp = SessionDescription.make(codec: .hevc, parameterSets: sets, sessionID: 1, serverAddress: "::1", framesPerSecond: 25)
        XCTAssertTrue(sdp.contains("a=rtpmap:96 H265/90000\r\n"))
        XCTAssertTrue(sdp.contains("a=fmtp:96 sprop-vps=QAEMAQ==;sprop-sps=QgEBAQ==;sprop-pps=RAHBcg==\r\n"), sdp)
        XCTAssertTrue(sdp.contains("c=IN IP6 ::\r\n"))
    }
}
