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

    /// Audio packet `sequence` (numbered from 1000 so the two kinds cannot be mistaken).
    private func audio(_ sequence: Int) -> StreamChunk {
        let c = pool.take()
        c.fill { $0 = [0xFF, 0xF1] }
        c.kind = .audio
        c.isIDR = false
        c.sequence = UInt64(1000 + sequence)
        c.presentationTimeNanoseconds = UInt64(sequence) * 21_333_333
        c.durationNanoseconds = 21_333_333
        c.retain()
        return c
    }

    func testOnlySubscribersThatTakeAudioGetItFromTheirFirstIDROnInPublishedOrder() throws {
        let hub = StreamHub(label: "t", ring: .newestPictureGroup, keyframes: KeyframeGate())
        let withSound = try XCTUnwrap(hub.subscribe("mp4", from: .nextIDR, policy: .lossless(depth: 100), withAudio: true))
        let without = try XCTUnwrap(hub.subscribe("h264", from: .nextIDR, policy: .lossless(depth: 100)))
        hub.publish(audio(0))          // before any IDR: not kept
        for i in 8..<12 {
            hub.publish(video(i))
            hub.publish(audio(i))
        }
        XCTAssertEqual(drained(withSound), [10, 1010, 11, 1011])
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
        // Sound is published after the frames of its moment (the encoder's delay): packet i after frame i + 1.
        for i in 0..<12 {
            hub.publish(video(i, idrEvery: 4))
            if i > 0 { hub.publish(audio(i - 1)) }
        }
        XCTAssertEqual(hub.held.frames, 4, "maximumFrames counts frames: the newest picture group, 8...11")
        let clip = try XCTUnwrap(hub.subscribe("clip", from: .preroll(seconds: 10), policy: .lossless(depth: 100), withAudio: true))
        let viewer = try XCTUnwrap(hub.subscribe("h264", from: .preroll(seconds: 10), policy: .lossless(depth: 100)))
        XCTAssertEqual(drained(clip), [8, 1007, 9, 1008, 10, 1009, 11, 1010], "the pre-roll with its sound, in published order")
        XCTAssertEqual(drained(viewer), [8, 9, 10, 11], "no sound for a subscriber that does not take it")
        XCTAssertEqual(hub.newestPictureGroup()?.accessUnits.count, 4, "a snapshot's picture group has no sound in it")
        hub.close()
        assertEveryChunkIsBackInThePool(pool)
    }

    func testSoundThatComesAfterANewerIDRDoesNotShortenThePreroll() throws {
        let hub = StreamHub(label: "t", ring: RingBounds(seconds: 3, maximumBytes: 1 << 20, maximumFrames: 1000),
                            keyframes: KeyframeGate())
        // Frames 0..39 at 10 fps with an IDR every 10; each packet of sound (21 ms) arrives a frame late,
        // presented before the frame just published, an IDR among them.
        for i in 0..<40 {
            hub.publish(video(i))
            if i > 0 { hub.publish(audio(i * 4)) }
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
}
