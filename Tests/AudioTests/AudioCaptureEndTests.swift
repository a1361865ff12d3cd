import Frames
import Hub
import XCTest

@testable import Audio

/// The sound ends with the picture even when the video's encoders finish seconds after the last frame
/// was captured: the audio thread reads on in real time, but hands on nothing that begins more than a
/// margin past the capture's end (`endPublishing`; the outputs cut the rest to their picture), and
/// `finish` fills up to the video's end. The real tone, AAC encoder, timeline and hub.
final class AudioCaptureEndTests: XCTestCase {
    /// Outlives the chunks it gives (each returns to it through an unowned reference).
    private let pool = StreamChunkPool()

    /// The test tone's thread, started at presentation 0 (now), into a hub whose one subscriber (a
    /// file) has its first picture at 0, so every packet handed on reaches it.
    private func toneIntoAFile() throws -> (AudioCapture, StreamHub, Subscription, origin: UInt64) {
        let format = AudioFormat(sampleRate: 48000, channels: 1)
        let hub = StreamHub(label: "t", ring: .newestPictureGroup, keyframes: KeyframeGate())
        let file = try XCTUnwrap(hub.subscribe("mkv", from: .nextIDR, policy: .lossless(depth: 4096), withAudio: true))
        let idr = pool.take()
        idr.fill { $0 = [0, 0, 0, 1, 0x65] }
        idr.kind = .video
        idr.isIDR = true
        hub.publish(idr)
        let timeline = PresentationTimeline()
        let sound = AudioCapture(sound: (TestToneSource(format: format), try SoundEncoder(format: format, bitrate: 64000)),
                                 hubs: [hub], timeline: timeline)
        sound.start()
        let origin = MonotonicClock.now()
        timeline.anchor(capture: origin, presentation: 0)
        return (sound, hub, file, origin)
    }

    /// Where each audio packet the file got begins and ends, once the hub has closed.
    private func soundPackets(_ file: Subscription) -> [(start: UInt64, end: UInt64)] {
        var packets: [(start: UInt64, end: UInt64)] = []
        while let chunk = file.next() {
            if chunk.kind == .audio {
                packets.append((chunk.presentationTimeNanoseconds, chunk.presentationTimeNanoseconds + chunk.durationNanoseconds))
            }
            chunk.release()
        }
        return packets
    }

    func testNothingPastTheCapturesEndIsHandedOnWhileTheEncodersFinish() throws {
        let (sound, hub, file, _) = try toneIntoAFile()
        // The last frame is captured at 0.3 s; the encoders take till 2.2 s to finish, the sound reading on.
        let captureEnd: UInt64 = 300_000_000
        let limit = captureEnd + AudioCapture.publishingMargin
        MonotonicClock.sleep(until: MonotonicClock.now() + 250_000_000)
        sound.endPublishing(atPresentation: captureEnd)
        MonotonicClock.sleep(until: MonotonicClock.now() + 1_950_000_000)
        sound.finish(atPresentation: captureEnd)
        hub.close()

        let packets = soundPackets(file)
        let last = try XCTUnwrap(packets.last, "some sound was handed on")
        XCTAssertEqual(packets.filter { $0.start >= limit }.count, 0,
                       "no packet begins a margin past the capture's end (the last begins at \(last.start) ns)")
        XCTAssertGreaterThanOrEqual(last.end + 21_400_000, limit, "the sound reaches that far (one packet short at most)")
        XCTAssertNil(sound.failure)
    }

    /// A camera away from 0.3 to 3.0 s: nothing that begins in the gap (less a margin at each side) is
    /// handed on, and from a margin before the first frame after it on, the sound is again.
    func testNothingCapturedWhileTheCameraWasAwayIsHandedOnAndTheSoundRunsOnFromItsReturn() throws {
        let (sound, hub, file, origin) = try toneIntoAFile()
        let (lost, back): (UInt64, UInt64) = (300_000_000, 3_000_000_000)
        let margin = AudioCapture.publishingMargin
        MonotonicClock.sleep(until: origin + 250_000_000)
        sound.endPublishing(atPresentation: lost)
        MonotonicClock.sleep(until: origin + back)
        sound.resumePublishing(fromPresentation: back)
        MonotonicClock.sleep(until: origin + 3_400_000_000)
        sound.finish(atPresentation: 3_300_000_000)
        hub.close()

        let starts = soundPackets(file).map(\.start)
        XCTAssertEqual(starts.filter { $0 >= lost + margin && $0 < back - margin }, [], "nothing that begins while the camera was away")
        XCTAssertGreaterThan(starts.filter { $0 < lost + margin }.count, 50, "the sound before it, and a margin after")
        // The margin before the return has passed when it is told (the thread reads in real time): the
        // first packet handed on again begins by the return, or one packet (21.3 ms) after it at most.
        let firstBack = try XCTUnwrap(starts.first { $0 >= back - margin })
        XCTAssertLessThanOrEqual(firstBack, back + 21_400_000, "the sound runs on from the return")
        XCTAssertGreaterThan(starts.filter { $0 >= back }.count, 10)
        XCTAssertNil(sound.failure)
    }
}
