import CFFmpeg
import Threading
import Synchronization
import XCTest

@testable import Audio

/// libavcodec's AAC encoder as camrec drives it: packets back to back from the priming on, every
/// input sample covered, the burst where the tone put it once decoded by libavcodec's AAC decoder.
final class SoundEncoderTests: XCTestCase {
    private struct Encoded {
        var bytes: [UInt8]
        var firstSample: Int64
        var sampleCount: Int64
    }

    private func encodeTone(format: AudioFormat, seconds: Double, lastFrame: Int? = nil, codec: SoundCodec = .aac) throws -> (SoundEncoder, [Encoded], Int) {
        let encoder = try SoundEncoder(codec: codec, format: format, bitrate: 64_000 * format.channels)
        let tone = TestToneSource(format: format)
        tone.start(origin: 0)
        var packets: [Encoded] = []
        let frames = Int(seconds * Double(format.sampleRate)) / encoder.frameSize
        let keep: (SoundEncoder.Packet) -> Void = { packets.append(Encoded(bytes: Array($0.bytes), firstSample: $0.firstSample, sampleCount: $0.sampleCount)) }
        for _ in 0..<frames {
            try encoder.encode(sampleCount: encoder.frameSize, fill: { tone.write(channel: $0, into: $1) }, emit: keep)
            tone.advance(encoder.frameSize)
        }
        var total = frames * encoder.frameSize
        if let lastFrame {
            try encoder.encode(sampleCount: lastFrame, fill: { tone.write(channel: $0, into: $1) }, emit: keep)
            total += lastFrame
        }
        try encoder.flush(emit: keep)
        return (encoder, packets, total)
    }

    func testPacketsRunBackToBackFromThePrimingAndCoverEveryInputSample() throws {
        for format in [AudioFormat(sampleRate: 48000, channels: 1), AudioFormat(sampleRate: 44100, channels: 2)] {
            let (encoder, packets, total) = try encodeTone(format: format, seconds: 1, lastFrame: 300)
            XCTAssertEqual(encoder.frameSize, 1024)
            XCTAssertEqual(encoder.track.primingSamples, 1024, "libavcodec's AAC encoder primes with one frame")
            XCTAssertEqual(packets.first?.firstSample, -1024)
            for (a, b) in zip(packets, packets.dropFirst()) {
                XCTAssertEqual(b.firstSample, a.firstSample + a.sampleCount, "\(format): a gap or overlap")
            }
            let end = packets.last!.firstSample + packets.last!.sampleCount
            XCTAssertEqual(end, Int64(total), "\(format): the packets end with the last input sample")
            XCTAssertTrue(packets.allSatisfy { !$0.bytes.isEmpty })
        }
    }

    func testTheDecodedBurstsStartAtEachSecondAfterThePrimingIsDropped() throws {
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        let (_, packets, _) = try encodeTone(format: format, seconds: 3)
        let decoder = try XCTUnwrap(avcodec_find_decoder(AV_CODEC_ID_AAC))
        var context = avcodec_alloc_context3(decoder)
        defer { avcodec_free_context(&context) }
        let c = try XCTUnwrap(context)
        c.pointee.sample_rate = 48000
        av_channel_layout_default(&c.pointee.ch_layout, 1)
        XCTAssertGreaterThanOrEqual(avcodec_open2(c, decoder, nil), 0)
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame) }
        var decoded: [Float] = []
        func receive() {
            while avcodec_receive_frame(c, frame) >= 0 {
                let plane = UnsafeRawPointer(frame!.pointee.extended_data[0]!).assumingMemoryBound(to: Float.self)
                decoded += UnsafeBufferPointer(start: plane, count: Int(frame!.pointee.nb_samples))
            }
        }
        for encoded in packets {
            sendPacket(encoded.bytes, to: c, using: packet!)
            receive()
        }
        avcodec_send_packet(c, nil)
        receive()
        // What a player does with the priming: the first 1024 decoded samples are dropped.
        let audible = Array(decoded.dropFirst(1024))
        for second in 1..<3 {
            let onset = try XCTUnwrap((second * 48000 - 2400..<second * 48000 + 2400).first { abs(audible[$0]) > 0.05 })
            // Independently of camrec's stamps: the decoded burst starts within a millisecond of the second.
            XCTAssertEqual(Double(onset - second * 48000) / 48, 0, accuracy: 1, "burst \(second) starts \(onset - second * 48000) samples off")
        }
    }

    /// Opus through libopus: 960 samples a frame at 48 kHz, its pre-skip (312) as the priming, the
    /// packets back to back from there to the last input sample, mono and stereo (interleaved for it).
    func testOpusPacketsRunBackToBackFromThePreSkipAndCoverEveryInputSample() throws {
        for format in [AudioFormat(sampleRate: 48000, channels: 1), AudioFormat(sampleRate: 48000, channels: 2)] {
            let (encoder, packets, total) = try encodeTone(format: format, seconds: 1, lastFrame: 300, codec: .opus)
            XCTAssertEqual(encoder.frameSize, 960)
            XCTAssertEqual(encoder.track.primingSamples, 312, "libopus's pre-skip")
            XCTAssertEqual(encoder.track.codec.mimeCodec, "opus")
            XCTAssertEqual(packets.first?.firstSample, -312)
            for (a, b) in zip(packets, packets.dropFirst()) {
                XCTAssertEqual(b.firstSample, a.firstSample + a.sampleCount, "\(format): a gap or overlap")
            }
            let end = packets.last!.firstSample + packets.last!.sampleCount
            XCTAssertGreaterThanOrEqual(end, Int64(total), "\(format): the packets reach the last input sample")
            XCTAssertLessThan(end, Int64(total + encoder.frameSize), "\(format): and end within a frame of it")
        }
    }


    /// The invariant AudioTrackFormat is `@unchecked Sendable` on: its AVCodecParameters are written once,
    /// in `init`, and only read after; muxers on several threads (a file, the live view, RTSP) read it at once.
    func testATrackFormatIsReadFromManyThreadsAtOnceAlike() throws {
        let encoder = try SoundEncoder(codec: .aac, format: AudioFormat(sampleRate: 48000, channels: 2), bitrate: 128_000)
        let track = encoder.track
        let expected = track.codecConfiguration
        XCTAssertFalse(expected.isEmpty, "AAC has an AudioSpecificConfig")
        let wrong = Atomic<Int>(0)
        let readers = (0..<4).map { n in
            WorkerThread(name: "muxer\(n)") {
                for _ in 0..<500 where track.codecConfiguration != expected || track.primingSamples != 1024 {
                    wrong.add(1, ordering: .relaxed)
                }
            }
        }
        readers.forEach { $0.start() }
        readers.forEach { $0.join() }
        XCTAssertEqual(wrong.load(ordering: .relaxed), 0)
    }
}
