import Capture
import Encoder
import Frames
import Hub
import Logging
import Synchronization
import XCTest

@testable import Recorder

/// `--on-camera-lost wait` in the recorder, with real parts (the test pattern, libx264 with frame threads,
/// which hold frames back) and a camera that "goes away" after a set number of frames and is handed back
/// by a scripted `SourceReturn`.
final class SourceReturnTests: XCTestCase {
    private let size = FrameSize(width: 320, height: 180)

    private func encoder(threads: Int) throws -> sending VideoEncoder {
        try EncoderSelection.software(EncoderSettings(codec: .h264, size: size, framesPerSecond: 30, keyframeInterval: 100,
                                                      preset: "ultrafast", softwareThreads: threads))
    }

    /// A camera that goes after 25 frames and comes back twice, each time for 25 more, through libx264
    /// with three frame threads (it holds two frames back, which a loss must not strand).
    private func twentyFiveFramesLostAndBackTwice() throws -> (StreamHub, Recorder, Recorder.Hooks) {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let recorder = Recorder(source: LosingSource(size: size, frames: 25), encoder: try encoder(threads: 3), hub: hub,
                                keyframeInterval: 100, limits: .init(), logger: Logger(label: "test"))
        var hooks = Recorder.Hooks()
        hooks.sourceReturn = ScriptedReturn(size: size, frames: 25, times: 2)
        return (hub, recorder, hooks)
    }

    func testEveryFrameBeforeEachLossIsPublishedBeforeTheOutputsHearOfItAndTheStreamRunsOnFromAnIDR() throws {
        let (hub, recorder, returnTwice) = try twentyFiveFramesLostAndBackTwice()
        var hooks = returnTwice
        let publishedAtLoss = Mutex([Int]())
        hooks.onSourceLost = { _ in publishedAtLoss.withLock { $0.append(hub.publishedCount) } }
        let returned = Atomic<Int>(0)
        hooks.onSourceReturned = { _, _ in returned.add(1, ordering: .relaxed) }
        let got = Collected(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 128))))
        got.start()
        let result = recorder.run(hooks: hooks)
        got.waitUntilEnded()

        XCTAssertEqual(publishedAtLoss.withLock { $0 }, [25, 50, 75], "each stretch wholly published before the outputs hear of the loss")
        XCTAssertEqual(returned.load(ordering: .relaxed), 2)
        XCTAssertEqual(got.units.map(\.sequence), (0..<75).map { UInt64($0) }, "sequence numbers run on across the gaps")
        XCTAssertEqual(got.units.filter(\.isIDR).map(\.sequence), [0, 25, 50], "an IDR first after each return")
        XCTAssertEqual(result.framesEncoded, 75)
        XCTAssertEqual(result.source.delivered, 75, "the counters of every camera stretch, added up")
        guard case .deviceLost(let message)? = result.failure else { return XCTFail("the last loss ends it: \(String(describing: result.failure))") }
        XCTAssertTrue(message.contains("did not come back within 5 s"), message)
    }

    /// The sound is told at each loss where the picture stops (the last frame captured plus a frame),
    /// before the encoders put out what they hold, and where it starts again with the first frame after
    /// the return: what is captured in between has no picture to go with.
    func testEachLossTellsWhereThePictureStopsAndEachReturnWhereItStartsAgain() throws {
        let (hub, recorder, returnTwice) = try twentyFiveFramesLostAndBackTwice()
        var hooks = returnTwice
        let told = Mutex([(what: String, at: UInt64)]())
        hooks.onCaptureEnded = { end in told.withLock { $0.append(("ended", end)) } }
        hooks.onCaptureResumed = { start in told.withLock { $0.append(("resumed", start)) } }
        let got = Collected(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 128))))
        got.start()
        _ = recorder.run(hooks: hooks)
        got.waitUntilEnded()

        let times = got.units.map(\.presentation)
        XCTAssertEqual(times.count, 75)
        let frame: UInt64 = 1_000_000_000 / 30
        let calls = told.withLock { $0 }
        // Three losses, the last one for good: the capture's end, told once.
        XCTAssertEqual(calls.map(\.what), ["ended", "resumed", "ended", "resumed", "ended"])
        guard calls.count == 5, times.count == 75 else { return }
        XCTAssertEqual(calls.map(\.at), [times[24] + frame, times[25], times[49] + frame, times[50], times[74] + frame],
                       "each stretch's last frame plus a frame, and the first frame after each return")
    }

    func testTwoEncodingsH264AndH265EachPutOutEveryFrameBeforeTheLossAndRunOnFromAnIDR() throws {
        let hubs = (StreamHub(label: "h264", keyframes: KeyframeGate()), StreamHub(label: "hevc", keyframes: KeyframeGate()))
        var settings = (EncoderSettings(codec: .h264, size: size, framesPerSecond: 30, keyframeInterval: 100, preset: "ultrafast", softwareThreads: 2),
                        EncoderSettings(codec: .hevc, size: size, framesPerSecond: 30, keyframeInterval: 100, preset: "ultrafast", softwareThreads: 2))
        settings.0.planarInput = true
        settings.1.planarInput = true
        let branches = [EncodingBranch(encoder: try EncoderSelection.software(settings.0), hub: hubs.0, codec: .h264),
                        EncodingBranch(encoder: try EncoderSelection.software(settings.1), hub: hubs.1, codec: .hevc)]
        let recorder = Recorder(source: LosingSource(size: size, frames: 20, live: false), branches: branches, keyframeInterval: 100,
                                limits: .init(), logger: Logger(label: "test"))
        var hooks = Recorder.Hooks()
        hooks.sourceReturn = ScriptedReturn(size: size, frames: 20, times: 1, live: false)
        let atLoss = Mutex([[Int]]())
        hooks.onSourceLost = { _ in atLoss.withLock { $0.append([hubs.0.publishedCount, hubs.1.publishedCount]) } }
        let h264 = Collected(try XCTUnwrap(hubs.0.subscribe("a", from: .nextIDR, policy: .lossless(depth: 64))))
        let hevc = Collected(try XCTUnwrap(hubs.1.subscribe("b", from: .nextIDR, policy: .lossless(depth: 64))))
        h264.start()
        hevc.start()
        _ = recorder.run(hooks: hooks)
        h264.waitUntilEnded()
        hevc.waitUntilEnded()
        XCTAssertEqual(atLoss.withLock { $0 }, [[20, 20], [40, 40]], "both encoders flushed before the outputs hear of each loss")
        for got in [h264, hevc] {
            XCTAssertEqual(got.units.map(\.sequence), (0..<40).map { UInt64($0) })
            XCTAssertEqual(got.units.filter(\.isIDR).map(\.sequence), [0, 20])
        }
    }

    func testAStopWhileWaitingEndsTheRecordingWithoutAFailure() throws {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let recorder = Recorder(source: LosingSource(size: size, frames: 10), encoder: try encoder(threads: 1), hub: hub,
                                keyframeInterval: 100, limits: .init(), logger: Logger(label: "test"))
        let returns = ScriptedReturn(size: size, frames: 10, times: 0, waitForCancel: true)
        var hooks = Recorder.Hooks()
        hooks.sourceReturn = returns
        let stopper = recorder
        hooks.onSourceLost = { _ in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { stopper.stop() }
        }
        let result = recorder.run(hooks: hooks)
        XCTAssertNil(result.failure, "a stop while waiting is a clean end")
        XCTAssertEqual(result.framesEncoded, 10)
        XCTAssertTrue(returns.wasCancelled)
    }

    func testAStopThatComesWithTheLossEndsTheRecordingWithoutAFailure() throws {
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let source = LosingSource(size: size, frames: 10)
        let recorder = Recorder(source: source, encoder: try encoder(threads: 1), hub: hub,
                                keyframeInterval: 100, limits: .init(), logger: Logger(label: "test"))
        var hooks = Recorder.Hooks()
        hooks.sourceReturn = ScriptedReturn(size: size, frames: 10, times: 1)
        source.onLoss = { recorder.stop() }
        let result = recorder.run(hooks: hooks)
        XCTAssertNil(result.failure, "SIGINT as the camera went: a clean end, not 71")
        XCTAssertEqual(result.framesEncoded, 10)
    }

    func testContinuityCarriesTimeAcrossTheGapByHowLongTheCameraWasAway() {
        var continuity = SourceContinuity()
        let pool = PixelBufferPool(format: .nv12, width: 2, height: 2, capacity: 4)
        func frame(_ sequence: UInt64, pts: UInt64, captured: UInt64) -> PixelBuffer {
            let buffer = pool.tryTake()!
            defer { buffer.recycle() }
            buffer.sequence = sequence
            buffer.presentationTimeNanoseconds = pts
            buffer.captureTimeNanoseconds = captured
            continuity.carryOn(buffer)
            return buffer
        }
        XCTAssertEqual(frame(7, pts: 100, captured: 1_000).sequence, 7, "nothing changes before a gap")
        continuity.sourceChanged()
        let first = frame(0, pts: 0, captured: 5_000)
        XCTAssertEqual(first.sequence, 8)
        XCTAssertEqual(first.presentationTimeNanoseconds, 100 + 4_000, "later by the time it was away")
        let second = frame(1, pts: 33, captured: 5_033)
        XCTAssertEqual(second.sequence, 9)
        XCTAssertEqual(second.presentationTimeNanoseconds, 4_133)
    }
}

/// The test pattern, lost after `frames` frames as an unplugged camera is.
final class LosingSource: FrameSource, @unchecked Sendable {
    private let inner: TestPatternSource
    private let frames: Int
    private var delivered = 0
    private let lostAt = Mutex<SourceEnd?>(nil)
    /// Unpaced, so not live here: a live source of several encodings would skip frames for a branch behind.
    let isLive: Bool
    /// Called on the capture thread as the loss is found.
    var onLoss: (() -> Void)?
    init(size: FrameSize, frames: Int, live: Bool = true) {
        inner = TestPatternSource(size: size, fps: 30, realTime: false)
        self.frames = frames
        isLive = live
    }
    var summary: String { "losing " + inner.summary }
    var frameSize: FrameSize { inner.frameSize }
    var framesPerSecond: Double { inner.framesPerSecond }
    var statistics: SourceStatistics { inner.statistics }
    var end: SourceEnd? { lostAt.withLock { $0 } ?? inner.end }
    func start(pool: PixelBufferPool) throws { try inner.start(pool: pool) }
    func nextFrame() throws -> PixelBuffer? {
        guard delivered < frames else {
            // Not inner.stop(): the test pattern closes the pool then, and a camera's teardown does not.
            lostAt.withLock { $0 = .deviceLost("the test camera was unplugged") }
            onLoss?()
            return nil
        }
        delivered += 1
        return try inner.nextFrame()
    }
    func stop() { inner.stop() }
}

/// Hands back a new `LosingSource` `times` times, then times out after "5 s" (at once); or, with
/// `waitForCancel`, waits for `cancel()`.
final class ScriptedReturn: SourceReturn, @unchecked Sendable {
    private let size: FrameSize
    private let frames: Int
    private let left: Mutex<Int>
    private let waitForCancel: Bool
    private let live: Bool
    private let cancelled = DispatchSemaphore(value: 0)
    private let cancelSeen = Atomic<Bool>(false)
    var wasCancelled: Bool { cancelSeen.load(ordering: .relaxed) }

    init(size: FrameSize, frames: Int, times: Int, waitForCancel: Bool = false, live: Bool = true) {
        self.live = live
        self.size = size
        self.frames = frames
        left = Mutex(times)
        self.waitForCancel = waitForCancel
    }

    func waitForReturn(of lost: FrameSource) -> SourceReturnOutcome {
        if waitForCancel {
            cancelled.wait()
            return .cancelled
        }
        let again = left.withLock { n -> Bool in
            defer { n -= 1 }
            return n > 0
        }
        return again ? .returned(LosingSource(size: size, frames: frames, live: live)) : .timedOut(seconds: 5)
    }

    func cancel() {
        cancelSeen.store(true, ordering: .relaxed)
        cancelled.signal()
    }
}
