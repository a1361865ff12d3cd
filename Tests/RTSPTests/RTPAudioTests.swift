import XCTest

@testable import RTSP

/// The sound track: its SDP section (RFC 3640 for AAC, RFC 7587 for Opus) and its packets, read back as
/// a receiver reads them (AU header section by hand, fragments joined as FFmpeg's rtpdec_mpeg4 joins them).
final class RTPAudioTests: XCTestCase {
    // AAC-LC, 48 kHz, mono: object type 2, frequency index 3, channel configuration 1.
    private let config: [UInt8] = [0x11, 0x88]
    private let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1E, 0xAC, 0xD9, 0x40, 0xA0, 0x2F, 0xF9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x3C, 0x0F, 0x16, 0x2D, 0x96]
    private let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]

    private func lines(_ sdp: String) -> [String] { sdp.components(separatedBy: "\r\n").filter { !$0.isEmpty } }

    func testAACIsTheSecondMediaSectionAsMpeg4GenericAACHbrWithItsConfig() {
        let aac = RTPAudioTrack(codec: .aac(audioSpecificConfig: config), sampleRate: 48000, channels: 1)
        let sdp = SessionDescription.make(codec: .h264, parameterSets: [sps, pps], sessionID: 1, serverAddress: "127.0.0.1",
                                          framesPerSecond: 30, audio: aac)
        let all = lines(sdp)
        let video = try! XCTUnwrap(all.firstIndex(of: "m=video 0 RTP/AVP 96"))
        let audio = try! XCTUnwrap(all.firstIndex(of: "m=audio 0 RTP/AVP 97"))
        XCTAssertLessThan(video, audio, "the picture is the first track")
        XCTAssertEqual(Array(all[(audio - 1)...]), [
            "a=control:trackID=0",
            "m=audio 0 RTP/AVP 97",
            "a=rtpmap:97 mpeg4-generic/48000/1",
            "a=fmtp:97 streamtype=5;profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1188",
            "a=control:trackID=1",
        ])
        XCTAssertEqual(aac.clockRate, 48000)
        let stereo = RTPAudioTrack(codec: .aac(audioSpecificConfig: [0x12, 0x10]), sampleRate: 44100, channels: 2)
        XCTAssertTrue(stereo.sessionDescriptionLines.contains("a=rtpmap:97 mpeg4-generic/44100/2"))
        XCTAssertTrue(stereo.sessionDescriptionLines[2].hasSuffix(";config=1210"))
        XCTAssertEqual(stereo.clockRate, 44100)
        // Without sound: one track only.
        let bare = SessionDescription.make(codec: .h264, parameterSets: [sps, pps], sessionID: 1, serverAddress: "127.0.0.1", framesPerSecond: 30)
        XCTAssertFalse(bare.contains("m=audio"))
        XCTAssertFalse(bare.contains("trackID=1"))
    }

    func testOpusIsOpus48000Over2WhateverItCarriesWithSpropParameters() {
        let mono = RTPAudioTrack(codec: .opus, sampleRate: 48000, channels: 1)
        XCTAssertEqual(mono.sessionDescriptionLines, ["m=audio 0 RTP/AVP 97", "a=rtpmap:97 opus/48000/2", "a=fmtp:97 sprop-stereo=0", "a=control:trackID=1"])
        let stereo = RTPAudioTrack(codec: .opus, sampleRate: 24000, channels: 2)
        XCTAssertEqual(stereo.sessionDescriptionLines[1], "a=rtpmap:97 opus/48000/2")
        XCTAssertEqual(stereo.sessionDescriptionLines[2], "a=fmtp:97 sprop-stereo=1;sprop-maxcapturerate=24000")
        // RFC 7587 §4.1: the RTP clock is 48 kHz at any encoder rate, priming included.
        XCTAssertEqual(stereo.clockRate, 48000)
        XCTAssertEqual(stereo.ticks(ofSamples: 156), 312)
        XCTAssertEqual(stereo.ticks(nanoseconds: 1_000_000_000), 48000)
        let sdp = SessionDescription.make(codec: .hevc, parameterSets: [], sessionID: 1, serverAddress: "::1", framesPerSecond: nil, audio: mono)
        XCTAssertTrue(sdp.contains("a=control:trackID=0\r\nm=audio 0 RTP/AVP 97\r\n"), sdp)
    }

    /// RFC 3640 §3.2.1 read by hand: AU-headers-length in bits, then 13 bits of AU-size and 3 of AU-Index.
    private func auHeader(_ payload: [UInt8]) -> (headersBits: Int, size: Int, index: Int) {
        let bits = Int(payload[0]) << 8 | Int(payload[1])
        let header = Int(payload[2]) << 8 | Int(payload[3])
        return (bits, header >> 3, header & 7)
    }

    private func packets(_ au: [UInt8], _ track: RTPAudioTrack, mtu: Int) -> [(payload: [UInt8], marker: Bool)]? {
        var fragments: [RTPFragment] = []
        guard track.fragments(ofPacketBytes: au.count, maximumPacketBytes: mtu, into: &fragments) else {
            XCTAssertTrue(fragments.isEmpty, "a refused packet leaves nothing behind")
            return nil
        }
        return fragments.map { ($0.prefix + Array(au[$0.payload]), $0.marker) }
    }

    func testOneAACAccessUnitAPacketWithItsAUHeader() throws {
        let aac = RTPAudioTrack(codec: .aac(audioSpecificConfig: config), sampleRate: 48000, channels: 1)
        let au = (0..<371).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        let sent = try XCTUnwrap(packets(au, aac, mtu: 1400))
        XCTAssertEqual(sent.count, 1)
        XCTAssertTrue(sent[0].marker, "a packet of whole AUs has the marker")
        XCTAssertEqual(auHeader(sent[0].payload).headersBits, 16)
        XCTAssertEqual(auHeader(sent[0].payload).size, 371)
        XCTAssertEqual(auHeader(sent[0].payload).index, 0)
        XCTAssertEqual(Array(sent[0].payload[4...]), au)
        XCTAssertEqual(sent[0].payload.count + RTPPacketizer.headerBytes, 371 + 16)
        // Exactly the room of one packet: still one.
        XCTAssertEqual(packets([UInt8](repeating: 9, count: 1400 - 12 - 4), aac, mtu: 1400)?.count, 1)
    }

    func testAnAACAccessUnitOverTheMTUIsFragmentedAndOneOver8191BytesIsRefused() throws {
        let aac = RTPAudioTrack(codec: .aac(audioSpecificConfig: config), sampleRate: 48000, channels: 8)
        for (size, mtu) in [(1385, 1400), (3000, 1400), (6144, 576), (8191, 256)] {
            let au = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 13 + size) }
            let sent = try XCTUnwrap(packets(au, aac, mtu: mtu), "\(size) bytes at \(mtu)")
            XCTAssertEqual(sent.count, Int((Double(size) / Double(mtu - 16)).rounded(.up)), "\(size) bytes at \(mtu)")
            // As FFmpeg joins them: every fragment names the whole AU's size; the marker ends it.
            var joined: [UInt8] = []
            for (i, packet) in sent.enumerated() {
                XCTAssertLessThanOrEqual(packet.payload.count + RTPPacketizer.headerBytes, mtu)
                XCTAssertEqual(auHeader(packet.payload).headersBits, 16)
                XCTAssertEqual(auHeader(packet.payload).size, size)
                XCTAssertEqual(packet.marker, i == sent.count - 1)
                joined += packet.payload[4...]
            }
            XCTAssertEqual(joined, au, "\(size) bytes at \(mtu)")
        }
        XCTAssertNil(packets([UInt8](repeating: 1, count: 8192), aac, mtu: 65000), "13 bits of AU-size hold at most 8191")
        XCTAssertNotNil(packets([UInt8](repeating: 1, count: 8191), aac, mtu: 65000))
        XCTAssertNil(packets([], aac, mtu: 1400))
    }

    func testAnOpusPacketIsOneRTPPacketAndOneOverTheMTUIsRefused() throws {
        let opus = RTPAudioTrack(codec: .opus, sampleRate: 48000, channels: 2)
        let packet = (0..<1388).map { UInt8(truncatingIfNeeded: $0) }
        let sent = try XCTUnwrap(packets(packet, opus, mtu: 1400))
        XCTAssertEqual(sent.count, 1)
        XCTAssertEqual(sent[0].payload, packet, "no header of its own")
        XCTAssertFalse(sent[0].marker)
        XCTAssertNil(packets(packet + [0], opus, mtu: 1400), "RFC 7587 never fragments")
        XCTAssertNil(packets([], opus, mtu: 1400))
    }
}
