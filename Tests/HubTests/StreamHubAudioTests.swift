import XCTest

@testable import Hub

/// Audio packets in a hub: a producer beside the encoder whose packets reach only the subscribers that
/// take audio, from their first IDR on, in the order published, and never the ring or the frame counts.
final class StreamHubAudioTests: XCTestCase, @unchecked Sendable {
    private let pool = StreamChunkPool()

    private func video(_ sequence: Int, idrEvery: Int = 10) -> StreamChunk {
        let c = pool.take()
        c.fill { $0 = [0, 0, 0, 1, UInt8(truncatingIfNeeded: sequence)] }
        c.kind = .video
        c.sequence = UInt64(sequence)
        c.isIDR = sequence % idrEvery == 0
        c.presentationTimeNanoseconds = UInt64(sequence) * 100_000_000
        c.retain()
        return c
    }

    /// Audio packet `sequence` (numbered from 1000 so the two kinds cannot be mistaken): 1024 samples
    /// at 48 kHz (AAC), presented from `sequence` × 21.33 ms on the frames' clock.
    private func audio(_ sequence: Int) -> StreamChunk {
        let c = pool.take()
        c.fill { $0 = [0xFF, 0xF1] }
        c.kind = .audio
        c.isIDR = false
        c.sequence = UInt64(1000 + sequence)
        c.presentationTimeNanoseconds = UInt64(sequence) * 64_000_000 / 3
        c.durationNanoseconds = 64_000_000 / 3
        c.retain()
        return c
    }

    /// The audio packets presented during frame `frame` (10 fps: from frame × 100 ms for 100 ms), so
    /// that sound and picture are published on one timeline.
    private static func sound(ofFrame frame: Int) -> Range<Int> {
        // Packet k starts at k × 1024 / 48000 s: the first at or after frame f's time is ⌈f × 4800 / 1024⌉.
        func first(_ f: Int) -> Int { (f * 4800 + 1023) / 1024 }
        return first(frame)..<first(frame + 1)
    }

    private func publishSound(ofFrame frame: Int, to hub: StreamHub) {
        for packet in Self.sound(ofFrame: frame) { hub.publish(audio(packet)) }
    }

    /// What `drained` gives for the sound of `frames`.
    private static func soundIDs(ofFrames frames: ClosedRange<Int>) -> [Int] {
        frames.flatMap { sound(ofFrame: $0) }.map { 1000 + $0 }
    }

    func testOnlySubscribersThatTakeAudioGetItFromTheirFirstIDROnInPublishedOrder() throws {
        let hub = StreamHub(label: "t", ring: .newestPictureGroup, keyframes: KeyframeGate())
        let withSound = try XCTUnwrap(hub.subscribe("mp4", from: .nextIDR, policy: .lossless(depth: 100), withAudio: true))
        let without = try XCTUnwrap(hub.subscribe("h264", from: .nextIDR, policy: .lossless(depth: 100)))
        publishSound(ofFrame: 7, to: hub)          // before any frame: not kept
        // Each frame's sound after it (the audio encoder's delay): frame 9's comes before the IDR at
        // 1.0 s and is presented before it, so it is let go; from the IDR's moment on, all of it.
        for i in 8..<12 {
            hub.publish(video(i))
            publishSound(ofFrame: i, to: hub)
        }
        XCTAssertEqual(Self.sound(ofFrame: 10).first, 47, "the first packet at or after 1.0 s (1.0027 s)")
        XCTAssertEqual(drained(withSound), [10] + Self.soundIDs(ofFrames: 10...10) + [11] + Self.soundIDs(ofFrames: 11...11))
        XCTAssertEqual(drained(without), [10, 11])
        XCTAssertEqual(hub.publishedCount, 4, "audio packets are not frames")
        XCTAssertEqual(hub.newest?.sequence, 11)
        XCTAssertEqual(hub.held.frames, 2, "the ring holds the picture group, no sound")
        hub.close()
        XCTAssertNil(hub.newestPictureGroup())
        assertEveryChunkIsBackInThePool(pool)
    }

    /// A microphone's packets can come before the picture of their moment (the video encoder takes
    /// longer): what belongs at or after the first IDR follows it instead of being lost, what came
    /// before it is let go.
    func testSoundThatComesBeforeThePictureOfItsMomentFollowsTheIDR() throws {
        let hub = StreamHub(label: "t", ring: .newestPictureGroup, keyframes: KeyframeGate())
        let subscriber = try XCTUnwrap(hub.subscribe("mkv", from: .nextIDR, policy: .lossless(depth: 100), withAudio: true))
        hub.publish(video(9))
        // 0.981 s, 1.003 s and 1.024 s, all before the IDR at 1.0 s is published.
        for i in 46...48 { hub.publish(audio(i)) }
        hub.publish(video(10))
        hub.publish(audio(49))
        hub.publish(video(11))
        XCTAssertEqual(drained(subscriber), [10, 1047, 1048, 1049, 11])
        hub.close()
        assertEveryChunkIsBackInThePool(pool)
    }

    /// Sound held while waiting for an IDR is bounded and let go when the subscriber stops taking.
    func testSoundHeldBeforeAnIDRIsBoundedAndLetGo() throws {
        let hub = StreamHub(label: "t", ring: .newestPictureGroup, keyframes: KeyframeGate())
        let subscriber = try XCTUnwrap(hub.subscribe("mkv", from: .nextIDR, policy: .lossless(depth: 100), withAudio: true))
        for i in 0..<(Subscription.mostSoundBeforeIDR * 3) { hub.publish(audio(i)) }
        // Each packet comes from the pool; one let go is taken again: the pool grows only to what is held.
        XCTAssertLessThanOrEqual(pool.allocatedCount, Subscription.mostSoundBeforeIDR + 1, "no more than the bound is held")
        subscriber.cancel()
        hub.close()
        assertEveryChunkIsBackInThePool(pool)
    }

    func testTheRingKeepsTheSoundOfThePrerollForSubscribersThatTakeIt() throws {
        let hub = StreamHub(label: "t", ring: RingBounds(seconds: 5, maximumBytes: 1 << 20, maximumFrames: 4),
                            keyframes: KeyframeGate())
        // Sound is published after the frames of its moment (the encoder's delay): frame i's after frame i + 1.
        for i in 0..<12 {
            hub.publish(video(i, idrEvery: 4))
            if i > 0 { publishSound(ofFrame: i - 1, to: hub) }
        }
        XCTAssertEqual(hub.held.frames, 4, "maximumFrames counts frames: the newest picture group, 8...11")
        let clip = try XCTUnwrap(hub.subscribe("clip", from: .preroll(seconds: 10), policy: .lossless(depth: 100), withAudio: true))
        let viewer = try XCTUnwrap(hub.subscribe("h264", from: .preroll(seconds: 10), policy: .lossless(depth: 100)))
        // From the IDR's moment (0.8 s) to the end of frame 10's (1.1 s) every packet, in published order
        // (with frame 7's, which came after the IDR; the container leaves out what is before its picture).
        XCTAssertEqual(drained(clip), [8] + Self.soundIDs(ofFrames: 7...7) + [9] + Self.soundIDs(ofFrames: 8...8)
                       + [10] + Self.soundIDs(ofFrames: 9...9) + [11] + Self.soundIDs(ofFrames: 10...10),
                       "the pre-roll with its sound, in published order")
        XCTAssertEqual(drained(viewer), [8, 9, 10, 11], "no sound for a subscriber that does not take it")
        XCTAssertEqual(hub.newestPictureGroup()?.accessUnits.count, 4, "a snapshot's picture group has no sound in it")
        hub.close()
        assertEveryChunkIsBackInThePool(pool)
    }

    func testSoundThatComesAfterANewerIDRDoesNotShortenThePreroll() throws {
        let hub = StreamHub(label: "t", ring: RingBounds(seconds: 3, maximumBytes: 1 << 20, maximumFrames: 1000),
                            keyframes: KeyframeGate())
        // Frames 0..39 at 10 fps with an IDR every 10; each frame's sound arrives a frame late,
        // presented before the frame just published, an IDR among them.
        for i in 0..<40 {
            hub.publish(video(i))
            if i > 0 { publishSound(ofFrame: i - 1, to: hub) }
        }
        let clip = try XCTUnwrap(hub.subscribe("clip", from: .preroll(seconds: 2.5), policy: .lossless(depth: 1000), withAudio: true))
        XCTAssertEqual(drained(clip).first, 10, "2.5 s back from frame 39 (3.9 s) is 1.4 s: the IDR at frame 10 (1.0 s)")
        hub.close()
    }

    func testASubscriberThatTakesAudioHasRoomForItBesideItsDepthOfFrames() throws {
        let hub = StreamHub(label: "t", keyframes: KeyframeGate())
        let sub = try XCTUnwrap(hub.subscribe("mp4", from: .nextIDR, policy: .skipToIDR(depth: 4), withAudio: true))
        // Four frames and three packets of sound for each (96 kHz against 30 fps): no catch-up.
        for i in 0..<4 {
            hub.publish(video(i, idrEvery: 100))
            for a in 0..<3 { hub.publish(audio(i * 3 + a)) }
        }
        XCTAssertEqual(sub.snapshot.catchUps, 0)
        XCTAssertEqual(drained(sub).count, 16)
        hub.close()
    }

    func testACatchUpCountsTheFramesItSkippedNotTheSound() throws {
        let hub = StreamHub(label: "t", keyframes: KeyframeGate())
        let sub = try XCTUnwrap(hub.subscribe("server", from: .nextIDR, policy: .skipToIDR(depth: 2), withAudio: true))
        // Frames 0..9 (an IDR every 5) with two packets of sound each, nothing taken: the queue (2 x 4)
        // fills and the subscriber catches up.
        for i in 0..<10 {
            hub.publish(video(i, idrEvery: 5))
            hub.publish(audio(2 * i))
            hub.publish(audio(2 * i + 1))
        }
        let counters = sub.snapshot
        XCTAssertGreaterThan(counters.catchUps, 0)
        XCTAssertEqual(counters.offered, 10, "frames offered, not packets of sound")
        let got = drained(sub)
        let frames = got.filter { $0 < 1000 }.count
        XCTAssertEqual(counters.skipped + frames, 10, "every frame is either skipped or taken (got \(got))")
        XCTAssertEqual(sub.snapshot.taken, frames)
        hub.close()
    }

    /// After a catch-up the subscriber waits for an IDR again, and a microphone's packets come before
    /// the picture of their moment: the sound from the resuming IDR's moment on follows it, what
    /// belongs before it is let go, as at the start.
    func testAfterACatchUpTheSoundFromTheResumingIDRsMomentFollowsIt() throws {
        let hub = StreamHub(label: "t", keyframes: KeyframeGate())
        let sub = try XCTUnwrap(hub.subscribe("server", from: .nextIDR, policy: .skipToIDR(depth: 2), withAudio: true))
        // Frames 0..5 (an IDR every 5), each after its sound, nothing taken: room for 8 (2 frames x 4),
        // so the queue fills within frame 1's sound and the subscriber waits for the IDR at 0.5 s.
        for i in 0..<6 {
            publishSound(ofFrame: i, to: hub)
            hub.publish(video(i, idrEvery: 5))
        }
        XCTAssertEqual(sub.snapshot.catchUps, 1)
        XCTAssertEqual(Self.sound(ofFrame: 5).first, 24, "the first packet at or after 0.5 s (0.512 s)")
        XCTAssertEqual(drained(sub), [5] + Self.soundIDs(ofFrames: 5...5),
                       "the IDR, then every packet presented from its moment on, none from before it")
        hub.close()
        assertEveryChunkIsBackInThePool(pool)
    }
}
