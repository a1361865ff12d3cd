@testable import HTTPServer
import XCTest

/// `POST /whep`: the H.264 format camrec answers on, and the profile the SDP states, against the video
/// section of an offer Debian's Chromium made (trimmed of its other codecs and attributes).
final class WHEPOfferTests: XCTestCase {
    private let chromium = [
        "v=0", "o=- 4611 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0",
        "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 104 108 116 41", "c=IN IP4 0.0.0.0", "a=mid:0", "a=recvonly",
        "a=rtpmap:96 VP8/90000", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
        "a=rtpmap:102 H264/90000", "a=rtcp-fb:102 nack pli", "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f",
        "a=rtpmap:103 rtx/90000", "a=fmtp:103 apt=102",
        "a=rtpmap:104 H264/90000", "a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f",
        "a=rtpmap:108 H264/90000", "a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
        "a=rtpmap:116 H264/90000", "a=fmtp:116 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f",
        "a=rtpmap:41 H264/90000", "a=fmtp:41 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=f4001f",
    ].joined(separator: "\r\n") + "\r\n"

    func testTheSameProfileIsTakenAndTheOfferThenStatesTheStreamsLevel() throws {
        let offer = try WHEPOffer(sdp: chromium, profileLevelID: "4D0028")
        XCTAssertEqual(offer.payloadType, 116)
        XCTAssertTrue(offer.sdp.contains("a=fmtp:116 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d0028\r\n"), offer.sdp)
        XCTAssertTrue(offer.sdp.contains("a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n"), "others untouched")
    }

    /// libx264's High is not offered by this Chromium: Constrained Baseline's format carries it, and says High.
    func testAProfileNotOfferedGoesOnConstrainedBaselineAndTheAnswerSaysTheStreamsProfile() throws {
        let offer = try WHEPOffer(sdp: chromium, profileLevelID: "64001e")
        XCTAssertEqual(offer.payloadType, 108)
        let answer = offer.answer("v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 108\r\na=rtpmap:108 H264/90000\r\n"
                                  + "a=fmtp:108 packetization-mode=1;level-asymmetry-allowed=1\r\na=sendonly\r\n")
        XCTAssertEqual(answer, "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 108\r\na=rtpmap:108 H264/90000\r\n"
                       + "a=fmtp:108 packetization-mode=1;level-asymmetry-allowed=1;profile-level-id=64001e\r\na=sendonly\r\n")
        let bare = offer.answer("v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 108\r\na=rtpmap:108 H264/90000\r\n")
        XCTAssertTrue(bare.hasSuffix("a=rtpmap:108 H264/90000\r\na=fmtp:108 packetization-mode=1;profile-level-id=64001e\r\n"), bare)
    }

    func testOffersWithoutH264InPacketizationMode1AreRefusedInOneLine() {
        let cases = [
            ("not sdp", "is not SDP"),
            ("v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n", "no video"),
            ("v=0\r\nm=video 0 UDP/TLS/RTP/SAVPF 102\r\na=rtpmap:102 H264/90000\r\n", "no video"),
            ("v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 104\r\na=rtpmap:96 VP8/90000\r\na=rtpmap:104 H264/90000\r\n"
             + "a=fmtp:104 packetization-mode=0;profile-level-id=42001f\r\n", "no H.264 with packetization-mode=1"),
        ]
        for (sdp, words) in cases {
            XCTAssertThrowsError(try WHEPOffer(sdp: sdp, profileLevelID: "64001e")) { error in
                let line = (error as? WHEPOffer.Refusal)?.description ?? ""
                XCTAssertTrue(line.contains(words) && !line.contains("\n"), line)
            }
        }
    }

    /// The sound goes on the offer's Opus in its audio m-line after the video one; none without one.
    func testOpusIsTakenFromTheAudioSectionAfterTheVideo() throws {
        let audio = ["m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9", "c=IN IP4 0.0.0.0", "a=mid:1", "a=recvonly",
                     "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:63 red/48000/2",
                     "a=rtpmap:9 G722/8000"].joined(separator: "\r\n") + "\r\n"
        XCTAssertEqual(try WHEPOffer(sdp: chromium + audio, profileLevelID: "64001e").opusPayloadType, 111)
        XCTAssertNil(try WHEPOffer(sdp: chromium, profileLevelID: "64001e").opusPayloadType, "no audio offered")
        let rejected = audio.replacingOccurrences(of: "m=audio 9 ", with: "m=audio 0 ")
        XCTAssertNil(try WHEPOffer(sdp: chromium + rejected, profileLevelID: "64001e").opusPayloadType, "audio rejected")
        let withoutOpus = audio.replacingOccurrences(of: "opus/48000/2", with: "PCMU/8000")
        XCTAssertNil(try WHEPOffer(sdp: chromium + withoutOpus, profileLevelID: "64001e").opusPayloadType, "no Opus")
    }

    /// GStreamer's webrtcbin under max-bundle (what its whepsrc uses) offers the audio bundle-only: port 0
    /// and `a=bundle-only` (RFC 8843). That is sound offered, and webrtcbin is given it as Chromium's shape
    /// (port 9); a port 0 without `a=bundle-only`, or outside the BUNDLE group, is still sound refused.
    func testASectionOfferedBundleOnlyIsOfferedAndAPortZeroWithoutItIsRefused() throws {
        func offer(group: String, audioPort: String, bundleOnly: Bool) -> String {
            (["v=0", "o=- 1 0 IN IP4 0.0.0.0", "s=-", "t=0 0", group,
             "m=video 9 UDP/TLS/RTP/SAVPF 102", "c=IN IP4 0.0.0.0", "a=mid:video0", "a=recvonly",
             "a=rtpmap:102 H264/90000", "a=fmtp:102 packetization-mode=1;profile-level-id=42e01f",
             "m=audio \(audioPort) UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0"]
                + (bundleOnly ? ["a=bundle-only"] : []) + ["a=mid:audio1", "a=recvonly", "a=rtpmap:111 OPUS/48000/2"])
                .joined(separator: "\r\n") + "\r\n"
        }
        let bundled = try WHEPOffer(sdp: offer(group: "a=group:BUNDLE video0 audio1", audioPort: "0", bundleOnly: true), profileLevelID: "42e01f")
        XCTAssertEqual(bundled.opusPayloadType, 111, "the bundle-only audio is offered")
        XCTAssertTrue(bundled.sdp.contains("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"), bundled.sdp)
        XCTAssertFalse(bundled.sdp.contains("a=bundle-only"), bundled.sdp)
        XCTAssertTrue(bundled.sdp.contains("a=mid:audio1\r\na=recvonly\r\na=rtpmap:111 OPUS/48000/2\r\n"), "the rest of the section kept")
        let rejected = try WHEPOffer(sdp: offer(group: "a=group:BUNDLE video0 audio1", audioPort: "0", bundleOnly: false), profileLevelID: "42e01f")
        XCTAssertNil(rejected.opusPayloadType, "port 0 without a=bundle-only: the viewer rejected sound")
        let outside = try WHEPOffer(sdp: offer(group: "a=group:BUNDLE video0", audioPort: "0", bundleOnly: true), profileLevelID: "42e01f")
        XCTAssertNil(outside.opusPayloadType, "bundle-only outside the BUNDLE group is no offer")
        XCTAssertTrue(outside.sdp.contains("m=audio 0 UDP/TLS/RTP/SAVPF 111\r\n"), outside.sdp)
    }

    func testTheProfileLevelIDIsReadFromAnH264SPSOnly() {
        XCTAssertEqual(WHEPOffer.profileLevelID(sps: [0x67, 0x64, 0x00, 0x1E, 0xAC]), "64001e")
        XCTAssertEqual(WHEPOffer.profileLevelID(sps: [0x27, 0x42, 0xE0, 0x1F]), "42e01f")
        XCTAssertNil(WHEPOffer.profileLevelID(sps: [0x42, 0x01, 0x01, 0x01]), "an H.265 SPS")
        XCTAssertNil(WHEPOffer.profileLevelID(sps: [0x68, 0xEE, 0x3C, 0x80]), "a PPS")
    }
}
