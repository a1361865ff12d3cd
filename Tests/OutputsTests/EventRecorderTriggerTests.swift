import Foundation
import Hub
import Synchronization
import XCTest

@testable import Outputs

/// Where a signal's event clip begins: its pre-roll is reckoned back from the camera's newest frame, not
/// from the newest the encoder has put out, which behind a starved encoder is seconds older.
final class EventRecorderTriggerTests: XCTestCase {
    private let pool = StreamChunkPool()

    /// Access unit `sequence` at 10 fps, an IDR (with SPS and PPS) every 10.
    private func chunk(_ sequence: Int) -> StreamChunk {
        let c = pool.take()
        let idr = sequence % 10 == 0
        if idr { c.fill { $0 += [0, 0, 0, 1, 0x67, 0x42, 0, 0x1E, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80] } }
        c.fill { $0 += [0, 0, 0, 1, idr ? 0x65 : 0x41, 0x88, 0x84] }
        c.isIDR = idr
        c.sequence = UInt64(sequence)
        c.presentationTimeNanoseconds = UInt64(sequence) * 100_000_000
        c.captureTimeNanoseconds = c.presentationTimeNanoseconds + 1
        c.retain()
        return c
    }

    func testASignalsPreRollIsReckonedFromTheNewestFrameCapturedNotTheNewestEncoded() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("camrec-events-\(getpid())-\(UInt32.random(in: 0 ... .max))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = RecordingFileOutput.Configuration(pattern: try OutputNamePattern(folder.path + "/clip-{n}.h264"),
                                                      device: "test", overwrite: false)
        let configuration = EventRecorder.Configuration(preRollSeconds: 2, postRollSeconds: 1, files: files)
        let hub = StreamHub(label: "h264", ring: configuration.ringBounds(framesPerSecond: 10, keyframeInterval: 10),
                            keyframes: KeyframeGate())
        let events = EventRecorder(configuration: configuration)
        try events.open(hub: hub, onFailure: { _ in })
        let first = Mutex<UInt64?>(nil)
        events.onEventStarted = { _, picture in first.withLock { $0 = picture?.sequence } }
        // Encoded up to frame 12 (1.2 s), IDRs at 0 and 10; the camera is at frame 32 (3.2 s).
        for i in 0...12 { hub.publish(chunk(i)) }
        hub.noteCaptured(.init(sequence: 32, presentationTimeNanoseconds: 3_200_000_000))
        guard case .started(let event) = events.trigger(.signal) else { return XCTFail("no event started") }
        XCTAssertEqual(event.triggerFrame, 32, "the frame the camera was at")
        XCTAssertEqual(first.withLock { $0 }, 10, "the newest IDR at least 2 s before 3.2 s (IDR 0 is 2 s before the newest encoded)")
        for i in 13...45 { hub.publish(chunk(i)) }
        hub.close()
        _ = events.finish()
    }
}
