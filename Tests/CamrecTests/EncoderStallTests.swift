@testable import camrec
import Capture
import Encoder
import Foundation
import Frames
import Hub
import Logging
import Outputs
import Recorder
import Synchronization
import XCTest

/// Real libx264, held up before its first frame for a set time: what a cold start on a slow
/// machine does (code paged in from an SD card or, in the test VM, a 9p share), or another
/// process taking the only CPU. The camera does not wait meanwhile.
private final class HeldUpEncoder: VideoEncoder {
    private let inner: VideoEncoder
    private let holdSeconds: Double
    private var heldUp = false

    init(_ inner: VideoEncoder, holdSeconds: Double) {
        self.inner = inner
        self.holdSeconds = holdSeconds
    }

    var name: String { inner.name }
    var inputFormat: PixelFormat { inner.inputFormat }
    var maximumBuffersInFlight: Int { inner.maximumBuffersInFlight }
    var onBufferDone: ((PixelBuffer) -> Void)? {
        get { inner.onBufferDone }
        set { inner.onBufferDone = newValue }
    }
    var onPacket: ((EncodedPacket) -> Void)? {
        get { inner.onPacket }
        set { inner.onPacket = newValue }
    }
    var parameterSets: [UInt8]? { inner.parameterSets }
    func start() throws { try inner.start() }
    func makePool(width: Int, height: Int, capacity: Int) -> PixelBufferPool {
        inner.makePool(width: width, height: height, capacity: capacity)
    }
    func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        if !heldUp {
            heldUp = true
            usleep(UInt32(holdSeconds * 1_000_000))
        }
        try inner.encode(buffer, forceKeyframe: forceKeyframe)
    }
    func flush() throws { try inner.flush() }
    func finishPending() throws { try inner.finishPending() }
}

/// A live source keeps every frame through an encoder stall of up to two seconds (the pool's
/// headroom), and drops and counts frames beyond it, saying so while it records (the warning camrec
/// prints). Truth: the burned-in counters ffmpeg decodes.
final class EncoderStallTests: ScratchDirectoryTestCase {
    private let size = FrameSize(width: 640, height: 360)
    private let fps = 10.0

    private func record(holdingUpFor seconds: Double, frames: Int) throws
        -> (result: RecordingResult, counters: [UInt64?], warnings: [UInt64]) {
        let settings = EncoderSettings(size: size, framesPerSecond: fps, keyframeInterval: 10, preset: "ultrafast")
        let encoder = HeldUpEncoder(try EncoderSelection.software(settings), holdSeconds: seconds)
        let path = "\(dir)/held-up.h264"
        let hub = StreamHub(label: "h264", keyframes: KeyframeGate())
        let outputs = OutputSet([(QueuedOutput(sink: FileSink(path: path, overwrite: true)), hub)])
        let recorder = Recorder(source: TestPatternSource(size: size, fps: fps), encoder: encoder, hub: hub,
                                keyframeInterval: 10, limits: .init(frames: frames), logger: Logger(label: "test"))
        let warnings = Mutex([UInt64]())
        var hooks = Recorder.Hooks()
        hooks.onEncoderBehind = { dropped in warnings.withLock { $0.append(dropped) } }
        try outputs.open { error in recorder.stop(failing: .output(error)) }
        var result = recorder.run(hooks: hooks)
        result.settle(outputs: outputs.finish())
        XCTAssertNil(result.failure)
        return (result, try Tools.patternCounters(path), warnings.withLock { $0 })
    }

    func testAnEncoderHeldUpOneAndAHalfSecondsAtTheStartLosesNoFrameAndWarnsOfNone() throws {
        let (result, counters, warnings) = try record(holdingUpFor: 1.5, frames: 40)
        XCTAssertEqual(result.source.dropped, 0)
        XCTAssertEqual(counters, (0..<40).map { UInt64($0) }, "every frame the camera made, in order")
        XCTAssertEqual(warnings, [], "no frame lost, no warning")
    }

    func testAnEncoderHeldUpFourSecondsDropsOnlyWhatItReportsAndNoMoreThanTheStallMadeAndWarnsAsItDrops() throws {
        let (result, counters, warnings) = try record(holdingUpFor: 4, frames: 60)
        let numbers = counters.compactMap { $0 }
        XCTAssertEqual(numbers.count, 60, "every picture carries its number")
        let missing = zip(numbers, numbers.dropFirst()).reduce(UInt64(0)) { $0 + ($1.1 - $1.0 - 1) }
        XCTAssertEqual(numbers, numbers.sorted(), "in order")
        // What the stall must drop: the pool is 2 buffers in flight + 20 of headroom (2 s at 10 fps,
        // Recorder.stallHeadroom). The held-up encoder keeps frame 0; in the 4 s the camera makes 40 more,
        // 21 buffers take 21 of them, so 19 are dropped. Measured: 19, 19, 19 (3 runs). From below: 18
        // (one frame of clock phase); more headroom, or none at all, falls outside. From above: 22, for a
        // busy machine oversleeping the 4 s or encoding the backlog slower than 10 fps.
        XCTAssertGreaterThanOrEqual(result.source.dropped, 18, "19 dropped: 40 made in the stall, 21 spare buffers (dropped \(result.source.dropped))")
        XCTAssertLessThanOrEqual(result.source.dropped, 22, "19 dropped: 40 made in the stall, 21 spare buffers (dropped \(result.source.dropped))")
        XCTAssertEqual(missing, result.source.dropped, "the pictures miss exactly the frames reported dropped")
        // The warning comes while frames are being lost, with a count the pictures bear out: at least one
        // missing, never more than they miss in all (the recording goes on dropping after it).
        XCTAssertFalse(warnings.isEmpty, "frames were lost for want of encoder time: camrec must say so as it happens")
        XCTAssertGreaterThanOrEqual(warnings.first ?? 0, 1, "the first warning counts the first frame lost")
        XCTAssertLessThanOrEqual(warnings.last ?? 0, missing, "a warning never counts more than the pictures miss (\(warnings))")
    }

    /// The line itself: `--threads 2` is advised only where it adds a thread (libx264 on one thread with one
    /// slice); elsewhere what does: a faster preset, a smaller size, a lower rate.
    func testTheWarningAdvisesASecondThreadOnlyForLibx264OnOneThread() {
        let size = FrameSize(width: 3840, height: 2160)
        let one = EncoderBehindWarning(encoder: "libx264 (software)", oneX264Thread: true, threads: 1, preset: "veryfast",
                                       size: size, framesPerSecond: 30)
        XCTAssertEqual(one.line(droppedSoFar: 12), "camrec: warning: the encoder is not keeping up with the camera: 12 frames dropped so far "
            + "(libx264 (software), 1 thread, preset veryfast, 3840x2160 at 30 fps); --threads 2 (a frame of delay more), a faster --preset "
            + "or a smaller --size would keep up")
        var two = one
        two.oneX264Thread = false
        two.threads = 2
        XCTAssertFalse(two.line(droppedSoFar: 1).contains("--threads"), two.line(droppedSoFar: 1))
        XCTAssertTrue(two.line(droppedSoFar: 1).contains(": 1 frame dropped so far (libx264 (software), 2 threads,"), two.line(droppedSoFar: 1))
        let gpu = EncoderBehindWarning(encoder: "h264_vaapi", oneX264Thread: false, threads: 1, preset: nil, size: size, framesPerSecond: 29.97)
        XCTAssertEqual(gpu.line(droppedSoFar: 3), "camrec: warning: the encoder is not keeping up with the camera: 3 frames dropped so far "
            + "(h264_vaapi, 3840x2160 at 29.97 fps); a smaller --size or a lower --fps would keep up")
    }
}
