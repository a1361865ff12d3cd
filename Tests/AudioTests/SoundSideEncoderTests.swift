import CFFmpeg
import Synchronization
import XCTest

@testable import Audio

/// The WebRTC viewers' shared Opus encode (`SoundSideEncoder`), driven as the audio thread drives it beside
/// AAC's 1024-sample frames: its packets, decoded by libavcodec's own Opus decoder with nothing dropped (as a
/// WebRTC receiver does, which never sees OpusHead's pre-skip), put each of the test tone's bursts at the
/// capture time it was made at, also after a pause in which nobody wanted the packets; and each packet leaves
/// as soon as the last sample of its 10 ms has been captured, not when AAC's frame is full.
final class SoundSideEncoderTests: XCTestCase {
    private final class Feed: SoundSideFeed {
        struct Packet {
            var bytes: [UInt8]
            var capture: UInt64
            var duration: UInt64
        }
        let wanted = Atomic<Bool>(true)
        let packets = Mutex<[Packet]>([])
        /// Samples the source had captured (counted from sample 0) when each packet came.
        let captured = Mutex<[UInt64]>([])
        let capturedNow = Atomic<UInt64>(0)
        var isWanted: Bool { wanted.load(ordering: .relaxed) }
        func deliver(_ packet: UnsafeRawBufferPointer, captureNanoseconds: UInt64, durationNanoseconds: UInt64) {
            packets.withLock { $0.append(Packet(bytes: Array(packet), capture: captureNanoseconds, duration: durationNanoseconds)) }
            captured.withLock { $0.append(capturedNow.load(ordering: .relaxed)) }
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
        let opus = try SoundEncoder(codec: .opus, format: format, bitrate: 64_000, opusFrameMilliseconds: 10)
        let side = SoundSideEncoder(encoder: opus, feed: feed)
        XCTAssertEqual(opus.frameSize, 480)
        let origin: UInt64 = 5_000_000_000
        let tone = TestToneSource(format: format)
        tone.start(origin: origin)
        let main = UnsafeMutableBufferPointer<Float>.allocate(capacity: aacFrame)
        defer { main.deallocate() }
        // 6 s as AudioCapture's loop runs it: wait for the nearer of the two frames, let the side encoder take
        // what is there, encode AAC's frame when it is full. Nobody wants the packets from 2.5 s to 4.2 s.
        while tone.position < 6 * 48000 {
            let second = Double(tone.position) / 48000
            feed.wanted.store(!(2.5..<4.2).contains(second), ordering: .relaxed)
            let ready = side.samplesToWaitFor(mainFrame: aacFrame, source: tone)
            feed.capturedNow.store(tone.position + UInt64(ready), ordering: .relaxed)
            try side.take(ready: ready, source: tone)
            if ready == aacFrame {
                tone.write(channel: 0, into: main)
                tone.advance(aacFrame)
            }
        }
        let packets = feed.packets.withLock { $0 }
        XCTAssertGreaterThan(packets.count, 400)
        XCTAssertTrue(packets.allSatisfy { $0.duration == 10_000_000 }, "10 ms frames")
        // Back to back while wanted, with one jump over the pause.
        let jumps = zip(packets, packets.dropFirst()).filter { $1.capture != $0.capture + 10_000_000 }
        XCTAssertEqual(jumps.count, 1, "one jump, at the pause")
        // A packet's stamp is its first input sample's capture time less the priming: it leaves when the
        // source has just captured the last of its 480 input samples.
        let priming = Double(opus.track.primingSamples)
        for (packet, captured) in zip(packets, feed.captured.withLock { $0 }) {
            let firstInput = (Double(Int64(packet.capture) - Int64(origin)) * 48000 / 1e9 + priming).rounded()
            XCTAssertEqual(Double(captured), firstInput + 480,
                           "the packet from sample \(firstInput) left when \(captured) samples had been captured")
        }
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
