import Bitstream
import Capture
import Encoder
import Frames
import Hub
import Logging
import Outputs
import Synchronization
import XCTest

@testable import Recorder

/// The recorder on its own, with real parts (the test pattern, libx264 through libavcodec) and no
/// output: it publishes into hubs, and these tests subscribe there as outputs would.
final class RecorderTests: XCTestCase {
    private let size = FrameSize(width: 320, height: 180)

    private func encoder(_ codec: VideoCodec = .h264, planar: Bool = false, keyframeInterval: Int = 10) throws -> sending VideoEncoder {
        var settings = EncoderSettings(codec: codec, size: size, framesPerSecond: 30, keyframeInterval: keyframeInterval, preset: "ultrafast")
        settings.planarInput = planar
        return try EncoderSelection.software(settings)
    }

    /// Everything a subscription gets until the hub closes: (sequence, IDR) pairs.
    private func collect(_ subscription: Subscription) -> Collected {
        let thread = Collected(subscription)
        thread.start()
        return thread
    }

    func testOneEncodingPublishesEveryFrameInOrderFromAnIDRWithAnIDREveryInterval() throws {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let recorder = Recorder(source: TestPatternSource(size: size, fps: 30, realTime: false), encoder: try encoder(), hub: hub,
                                keyframeInterval: 10, limits: .init(frames: 45), logger: Logger(label: "test"))
        let got = collect(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 8))))
        let result = recorder.run()
        XCTAssertNil(result.failure)
        got.waitUntilEnded()
        XCTAssertEqual(got.units.map(\.sequence), (0..<45).map { UInt64($0) }, "every frame, in order")
        XCTAssertEqual(got.units.filter(\.isIDR).map(\.sequence), [0, 10, 20, 30, 40])
        XCTAssertEqual(result.framesEncoded, 45)
        XCTAssertEqual(result.idrFrames, 5)
        XCTAssertNil(hub.subscribe("late", from: .nextIDR, policy: .lossless(depth: 1)), "the hub closed when the recording ended")
    }

    /// The sound stops being handed on where the capture ended, before the encoders finish (a slow
    /// preset's flush takes seconds), and is finished up to the video's end after: both hooks, in that
    /// order, the first at the last frame captured plus a frame, the second at the last encoded plus one.
    func testTheCapturesEndIsToldBeforeTheEncodersFinishAndTheVideosEndAfter() throws {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let recorder = Recorder(source: TestPatternSource(size: size, fps: 30, realTime: false), encoder: try encoder(), hub: hub,
                                keyframeInterval: 10, limits: .init(frames: 45), logger: Logger(label: "test"))
        let got = collect(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 64))))
        let told = Mutex<[(what: String, at: UInt64?, published: Int)]>([])
        var hooks = Recorder.Hooks()
        hooks.onCaptureEnded = { end in told.withLock { $0.append(("capture", end, hub.publishedCount)) } }
        hooks.onVideoEnded = { end in told.withLock { $0.append(("video", end, hub.publishedCount)) } }
        // (How many frames were published when the capture's end was told is a race with the encoder's
        // thread: not asserted.)
        XCTAssertNil(recorder.run(hooks: hooks).failure)
        got.waitUntilEnded()
        let calls = told.withLock { $0 }
        XCTAssertEqual(calls.map(\.what), ["capture", "video"], "each once, the capture's end first")
        let frame: UInt64 = 1_000_000_000 / 30
        let last = try XCTUnwrap(got.units.last?.presentation)
        XCTAssertEqual(calls.first?.at, last + frame, "the last frame captured (all 45 encoded) plus a frame")
        XCTAssertEqual(calls.last?.at, last + frame)
        XCTAssertEqual(calls.last?.published, 45, "the video's end once every frame is published")
    }

    /// A camera's frames wait in the pool for an encoder that is behind (a starved CPU: 22 s of them in a
    /// VM, its microphone's sound going on into the file past the picture meanwhile): the capture's end is
    /// told as the last frame is captured, while the first still waits to be encoded.
    func testTheCapturesEndIsToldWhileFramesStillWaitForTheEncoder() throws {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let recorder = Recorder(source: TestPatternSource(size: size, fps: 30, realTime: false), encoder: try encoder(), hub: hub,
                                keyframeInterval: 10, limits: .init(frames: 3), logger: Logger(label: "test"))
        XCTAssertGreaterThanOrEqual(try recorder.makePool().capacity, 3, "the three frames fit in a camera's pool")
        let got = collect(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 8))))
        let ended = Mutex<UInt64?>(nil)
        let toldBeforeTheFirstEncoded = Mutex<Bool?>(nil)
        var hooks = Recorder.Hooks()
        hooks.onCaptureEnded = { end in ended.withLock { $0 = end } }
        hooks.onFrameBeforeEncoding = { buffer in
            guard buffer.sequence == 0 else { return }
            // The encoder held up at the first frame: the other two are captured meanwhile, or never.
            let deadline = MonotonicClock.now() + 5_000_000_000
            while ended.withLock({ $0 }) == nil && MonotonicClock.now() < deadline { usleep(1000) }
            toldBeforeTheFirstEncoded.withLock { $0 = ended.withLock { $0 } != nil }
        }
        XCTAssertNil(recorder.run(hooks: hooks).failure)
        got.waitUntilEnded()
        XCTAssertEqual(toldBeforeTheFirstEncoded.withLock { $0 }, true, "told while frame 0 waited for its encoder")
        let last = try XCTUnwrap(got.units.last?.presentation)
        XCTAssertEqual(got.units.count, 3)
        XCTAssertEqual(ended.withLock { $0 }, last + 1_000_000_000 / 30, "the last frame captured plus a frame")
    }

    func testTwoEncodingsFromAFileSourceEachGetEveryFrame() throws {
        let hubs = (StreamHub(label: "a", keyframes: KeyframeGate()), StreamHub(label: "b", keyframes: KeyframeGate()))
        let branches = [EncodingBranch(encoder: try encoder(planar: true), hub: hubs.0, codec: .h264),
                        EncodingBranch(encoder: try encoder(planar: true), hub: hubs.1, codec: .h264)]
        let recorder = Recorder(source: NotLive(TestPatternSource(size: size, fps: 30, realTime: false)), branches: branches,
                                keyframeInterval: 10, limits: .init(frames: 30), logger: Logger(label: "test"))
        let a = collect(try XCTUnwrap(hubs.0.subscribe("a", from: .nextIDR, policy: .lossless(depth: 4))))
        let b = collect(try XCTUnwrap(hubs.1.subscribe("b", from: .nextIDR, policy: .lossless(depth: 4))))
        XCTAssertNil(recorder.run().failure)
        a.waitUntilEnded()
        b.waitUntilEnded()
        XCTAssertEqual(a.units.map(\.sequence), (0..<30).map { UInt64($0) })
        XCTAssertEqual(b.units.map(\.sequence), (0..<30).map { UInt64($0) })
    }

    /// A file waits for the encoder instead of dropping, so its pool holds only what the encoders may hold
    /// (issue 26): one buffer for libx264 and for libx265, which copy the picture; two encodings, which hold
    /// the same frames, the slower one's buffer in flight and the next frame. And with no spare the recording
    /// still takes every frame (for two encodings: `testTwoEncodingsFromAFileSourceEachGetEveryFrame`).
    func testAFileSourceIsGivenNoMorePoolBuffersThanItsEncodersHoldAndStillRecordsEveryFrame() throws {
        for (codec, expected) in [(VideoCodec.h264, 1), (.hevc, 1)] {
            let hub = StreamHub(label: codec.rawValue, keyframes: KeyframeGate())
            let encoder = try encoder(codec)
            XCTAssertEqual(encoder.maximumBuffersInFlight, expected)
            let recorder = Recorder(source: NotLive(TestPatternSource(size: size, fps: 30, realTime: false)), encoder: encoder, hub: hub,
                                    keyframeInterval: 10, limits: .init(frames: 25), codec: codec, logger: Logger(label: "test"))
            XCTAssertEqual(try recorder.makePool().capacity, expected, "\(codec): the encoder's buffers and no spare")
            let got = collect(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 30))))
            XCTAssertNil(recorder.run().failure)
            got.waitUntilEnded()
            XCTAssertEqual(got.units.map(\.sequence), (0..<25).map { UInt64($0) }, "\(codec): every frame from a pool of \(expected)")
        }
        let branches = [EncodingBranch(encoder: try encoder(planar: true), hub: StreamHub(label: "a", keyframes: KeyframeGate()), codec: .h264),
                        EncodingBranch(encoder: try encoder(planar: true), hub: StreamHub(label: "b", keyframes: KeyframeGate()), codec: .h264)]
        let two = Recorder(source: NotLive(TestPatternSource(size: size, fps: 30, realTime: false)), branches: branches,
                           keyframeInterval: 10, limits: .init(frames: 5), logger: Logger(label: "test"))
        XCTAssertEqual(try two.makePool().capacity, 2, "the slower encoding's buffer in flight and the next frame")
        let live = Recorder(source: TestPatternSource(size: size, fps: 30, realTime: true), encoder: try encoder(), hub: StreamHub(label: "l", keyframes: KeyframeGate()),
                            keyframeInterval: 10, limits: .init(frames: 5), logger: Logger(label: "test"))
        XCTAssertEqual(try live.makePool().capacity, 1 + Recorder.stallHeadroom(framesPerSecond: 30, frameBytes: 320 * 180 * 3 / 2),
                       "a camera keeps its headroom")
    }

    /// 40 test-pattern frames, as fast as they encode, into one hub whose gate grants every request.
    private func fortyFramesThroughAnOpenGate(keyframeInterval: Int) throws -> (KeyframeGate, StreamHub, Recorder) {
        let gate = KeyframeGate(minimumIntervalSeconds: 0)
        let hub = StreamHub(label: "h264", keyframes: gate)
        let recorder = Recorder(source: TestPatternSource(size: size, fps: 30, realTime: false),
                                encoder: try encoder(keyframeInterval: keyframeInterval), hub: hub,
                                keyframeInterval: keyframeInterval, limits: .init(frames: 40), logger: Logger(label: "test"))
        return (gate, hub, recorder)
    }

    func testAKeyframeRequestThroughTheGateMakesTheNextFrameAnIDR() throws {
        let (gate, hub, recorder) = try fortyFramesThroughAnOpenGate(keyframeInterval: 1000)
        let subscription = try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 1)))
        let requested = Collected(subscription) { unit in
            // Asked for while frame 5 is taken: the encoder is at most the queue and the pool ahead.
            if unit.sequence == 5 { XCTAssertTrue(gate.request()) }
        }
        requested.start()
        XCTAssertNil(recorder.run().failure)
        requested.waitUntilEnded()
        let idrs = requested.units.filter(\.isIDR).map(\.sequence)
        XCTAssertEqual(idrs.count, 2, "the first frame, and one asked for: \(idrs)")
        XCTAssertEqual(idrs.first, 0)
        XCTAssertGreaterThan(idrs.last ?? 0, 5)
    }

    func testAReceiverJoiningWhileTheFirstIDRIsBeingEncodedAddsNoSecondIDR() throws {
        let (gate, hub, recorder) = try fortyFramesThroughAnOpenGate(keyframeInterval: 30)
        let all = try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 64)))
        let late = Mutex<Collected?>(nil)
        // Joins (and asks for its first IDR, as a TCP receiver does) after frame 0 is made an IDR and
        // before the encoder has it: frame 0 is on its way, so the cadence must stay 0, 30.
        var hooks = Recorder.Hooks()
        hooks.onFrameBeforeEncoding = { buffer in
            guard buffer.sequence == 0,
                  let joined = hub.subscribe("late", from: .nextIDR, policy: .lossless(depth: 64), askForIDR: true) else { return }
            let collected = Collected(joined)
            collected.start()
            late.withLock { $0 = collected }
        }
        let collected = Collected(all)
        collected.start()
        XCTAssertNil(recorder.run(hooks: hooks).failure)
        collected.waitUntilEnded()
        XCTAssertEqual(collected.units.filter(\.isIDR).map(\.sequence), [0, 30])
        let lateOne = try XCTUnwrap(late.withLock { $0 })
        lateOne.waitUntilEnded()
        XCTAssertEqual(lateOne.units.first?.sequence, 0, "the late receiver starts with frame 0")
        XCTAssertEqual(gate.counts.alreadyComing, 1)
        XCTAssertEqual(gate.counts.granted, 0)
    }

    func testAStopFromAnotherThreadEndsTheRecordingAndClosesTheHubWithTheFailureGiven() throws {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let recorder = Recorder(source: TestPatternSource(size: size, fps: 30), encoder: try encoder(), hub: hub,
                                keyframeInterval: 10, limits: .init(), logger: Logger(label: "test"))
        let got = collect(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 8))))
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
            recorder.stop(failing: .output(OutputFailureForTest.error))
        }
        let result = recorder.run()
        got.waitUntilEnded()
        XCTAssertEqual(result.failure?.description, RecordingFailure.output(OutputFailureForTest.error).description,
                       "the recording ends with the failure it was stopped with")
        XCTAssertGreaterThan(got.units.count, 0)
        XCTAssertEqual(got.units.map(\.sequence), (0..<UInt64(got.units.count)).map { $0 }, "what was captured before the stop, all of it")
    }
}

enum OutputFailureForTest {
    static let error = Outputs.OutputError(.unwritable, "the disk went away")
}

/// A subscriber on a thread of its own, as a real output is.
final class Collected: @unchecked Sendable {
    struct Unit { var sequence: UInt64; var isIDR: Bool; var presentation: UInt64 = 0 }
    private let subscription: Subscription
    private let onUnit: (Unit) -> Void
    private let lock = NSLock()
    private var stored: [Unit] = []
    private let ended = DispatchSemaphore(value: 0)

    init(_ subscription: Subscription, onUnit: @escaping (Unit) -> Void = { _ in }) {
        self.subscription = subscription
        self.onUnit = onUnit
    }

    func start() {
        Thread { [self] in
            while let chunk = subscription.next() {
                let unit = Unit(sequence: chunk.sequence, isIDR: chunk.isIDR, presentation: chunk.presentationTimeNanoseconds)
                chunk.release()
                lock.lock(); stored.append(unit); lock.unlock()
                onUnit(unit)
            }
            ended.signal()
        }.start()
    }

    func waitUntilEnded() {
        XCTAssertEqual(ended.wait(timeout: .now() + 30), .success, "the hub's end reached the subscriber")
    }

    var units: [Unit] { lock.lock(); defer { lock.unlock() }; return stored }
}

/// The test pattern as a file would be read: never dropping, waiting for the encoders instead.
final class NotLive: FrameSource, @unchecked Sendable {
    private let inner: TestPatternSource
    init(_ inner: TestPatternSource) { self.inner = inner }
    var summary: String { inner.summary }
    var frameSize: FrameSize { inner.frameSize }
    var framesPerSecond: Double { inner.framesPerSecond }
    var statistics: SourceStatistics { inner.statistics }
    var end: SourceEnd? { inner.end }
    var isLive: Bool { false }
    func start(pool: PixelBufferPool) throws { try inner.start(pool: pool) }
    func nextFrame() throws -> PixelBuffer? { try inner.nextFrame() }
    func stop() { inner.stop() }
}
