import CFFmpeg
import Synchronization
import XCTest

@testable import Audio

/// The WebRTC viewers' shared Opus encode (`SoundSideEncoder`): fed the samples of AAC-sized frames, its
/// packets, decoded by libavcodec's own Opus decoder with nothing dropped (as a WebRTC receiver does, which
/// never sees OpusHead's pre-skip), put each of the test tone's bursts at the capture time it was made at,
/// also after a pause in which nobody wanted the packets.
final class SoundSideEncoderTests: XCTestCase {
    private final class Feed: SoundSideFeed {
        struct Packet {
            var bytes: [UInt8]
            var capture: UInt64
            var duration: UInt64
        }
        let wanted = Atomic<Bool>(true)
        let packets = Mutex<[Packet]>([])
        var isWanted: Bool { wanted.load(ordering: .relaxed) }
        func deliver(_ packet: UnsafeRawBufferPointer, captureNanoseconds: UInt64, durationNanoseconds: UInt64) {
            packets.withLock { $0.append(Packet(bytes: Array(packet), capture: captureNanoseconds, duration: durationNanoseconds)) }
        }
    }

    /// Decodes `packets` one by one: each packet's samples with the time the first is stamped with.
    private func decode(_ packets: [Feed.Packet]) throws -> [(capture: UInt64, samples: [Float])] {
        let decoder = try XCTUnwrap(avcodec_find_decoder(AV_CODEC_ID_OPUS))
        var context = avcodec_alloc_context3(decoder)
        defer { avcodec_free_context(&context) }
        let c = try XCTUnwrap(context)
        c.pointee.sample_rate = 48000
        c.pointee.request_sample_fmt = AV_SAMPLE_FMT_FLTP
        av_channel_layout_default(&c.pointee.ch_layout, 1)
        XCTAssertGreaterThanOrEqual(avcodec_open2(c, decoder, nil), 0)
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame) }
        var out: [(capture: UInt64, samples: [Float])] = []
        for encoded in packets {
            var samples: [Float] = []
            sendPacket(encoded.bytes, to: c, using: packet!)
            while avcodec_receive_frame(c, frame) >= 0 {
                XCTAssertEqual(frame!.pointee.format, AV_SAMPLE_FMT_FLTP.rawValue)
                let plane = UnsafeRawPointer(frame!.pointee.extended_data[0]!).assumingMemoryBound(to: Float.self)
                samples += UnsafeBufferPointer(start: plane, count: Int(frame!.pointee.nb_samples))
            }
            out.append((encoded.capture, samples))
        }
        return out
    }

    /// The capture times (ns) at which the decoded sound's bursts start (after at least half a second of quiet).
    private func burstOnsets(_ decoded: [(capture: UInt64, samples: [Float])]) -> [UInt64] {
        var onsets: [UInt64] = []
        var quiet = 48000
        for (capture, samples) in decoded {
            for (i, x) in samples.enumerated() {
                if abs(x) > 0.05 {
                    if quiet > 24000 { onsets.append(capture + UInt64(i) * 1_000_000_000 / 48000) }
                    quiet = 0
                } else {
                    quiet += 1
                }
            }
        }
        return onsets
    }

    func testDecodedBurstsSoundAtTheirCaptureTimeAcrossAPause() throws {
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        let aacFrame = 1024
        let feed = Feed()
        let side = SoundSideEncoder(encoder: try SoundEncoder(codec: .opus, format: format, bitrate: 64_000), feed: feed,
                                    mostPerFrame: aacFrame)
        XCTAssertEqual(side.encoder.frameSize, 960)
        let origin: UInt64 = 5_000_000_000
        let tone = TestToneSource(format: format)
        tone.start(origin: origin)
        let main = UnsafeMutableBufferPointer<Float>.allocate(capacity: aacFrame)
        defer { main.deallocate() }
        // 6 s of AAC-sized frames; nobody wants the packets from 2.5 s to 4.2 s.
        for _ in 0..<(6 * 48000 / aacFrame) {
            let second = Double(tone.position) / 48000
            feed.wanted.store(!(2.5..<4.2).contains(second), ordering: .relaxed)
            if side.begin(atSourceSample: tone.position) {
                tone.write(channel: 0, into: main)
                side.copy(channel: 0, main)
                try side.encodeReady(count: aacFrame, source: tone)
            }
            tone.advance(aacFrame)
        }
        let packets = feed.packets.withLock { $0 }
        XCTAssertGreaterThan(packets.count, 200)
        XCTAssertTrue(packets.allSatisfy { $0.duration == 20_000_000 }, "20 ms frames")
        // Back to back while wanted, with one jump over the pause.
        let jumps = zip(packets, packets.dropFirst()).filter { $1.capture != $0.capture + 20_000_000 }
        XCTAssertEqual(jumps.count, 1, "one jump, at the pause")
        let onsets = burstOnsets(try decode(packets))
        // The bursts at 1, 2 (before the pause) and 5 s (after it); the one at 0 s is where the decoder starts.
        let expected: [UInt64] = [1, 2, 5].map { origin + $0 * 1_000_000_000 }
        for second in expected {
            let nearest = try XCTUnwrap(onsets.min { abs(Int64(bitPattern: $0 &- second)) < abs(Int64(bitPattern: $1 &- second)) })
            XCTAssertEqual(Double(Int64(bitPattern: nearest &- second)) / 1e6, 0, accuracy: 1,
                           "the burst captured at \(second) ns sounds at \(nearest) ns by the stamps")
        }
        XCTAssertFalse(onsets.contains { (origin + 3_000_000_000..<origin + 4_100_000_000).contains($0) }, "nothing sent in the pause")
    }
}
