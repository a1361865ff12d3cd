import Bitstream
import Foundation
import XCTest

/// `--codec hevc` end to end: libx265 through the one stream writer, to a file, stdout and a TCP
/// receiver (ffmpeg), each checked by ffprobe, the independent Annex-B checker (--hevc) and the
/// burned-in frame numbers.
final class HEVCRecordingEndToEndTests: ScratchDirectoryTestCase {

    private func codecName(_ path: String) throws -> String {
        try Tools.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
            .stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testTwoHundredFramesWithAnIDREveryThirtyKeepTheContract() throws {
        // The issue's own command: 1280x720 at 30 fps, libx265 veryfast.
        let out = "\(dir)/out.h265"
        let r = try Tools.camrec(["--test-pattern", "--codec", "hevc", "--frames", "200", "--keyframe-interval", "30", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try codecName(out), "hevc")
        XCTAssertEqual(try Tools.decodedFrameCount(out), 200)
        XCTAssertEqual(try Tools.decodeErrors(out), "")
        try assertStreamContract(out, idrEvery: 30, frames: 200, codec: .hevc)
        let inspect = try Tools.camrec(["inspect", "--summary", out])
        XCTAssertEqual(inspect.status, 0, inspect.stdoutText)
        XCTAssertTrue(inspect.stdoutText.contains("video: H.265/HEVC Main profile"), inspect.stdoutText)
        XCTAssertTrue(r.stderr.contains("frames=200 idr=7"), r.stderr)
    }

    func testTheExtensionChoosesTheCodecAndEveryFrameArrivesInOrder() throws {
        let out = "\(dir)/clip.hevc"
        let r = try Tools.camrec(["--test-pattern", "--size", "640x360", "--frames", "60", "--keyframe-interval", "20", out])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try codecName(out), "hevc")
        Tools.assertEveryFrameAccounted(try Tools.patternCounters(out), frames: 60, output: out, stderr: r.stderr)
        try assertStreamContract(out, idrEvery: 20, frames: 60, codec: .hevc)
    }

    func testStdoutCarriesTheSameContract() throws {
        let r = try Tools.camrec(["--test-pattern", "--codec", "hevc", "--size", "640x360", "--frames", "45", "--keyframe-interval", "15", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = "\(dir)/stdout.h265"
        try r.stdout.write(to: URL(fileURLWithPath: out))
        Tools.assertEveryFrameAccounted(try Tools.patternCounters(out), frames: 45, output: "stdout", stderr: r.stderr)
        try assertStreamContract(out, idrEvery: 15, frames: 45, codec: .hevc)
    }

    func testFFmpegReceivesEveryFrameOverTCP() throws {
        let port = Int.random(in: 20_000..<21_000)
        let got = "\(dir)/got.h265"
        let (ffmpeg, _) = try Tools.launch("ffmpeg", ["-v", "error", "-y", "-f", "hevc", "-i", "tcp://127.0.0.1:\(port)?listen",
                                                      "-c", "copy", "-f", "hevc", got])
        defer { if ffmpeg.isRunning { ffmpeg.terminate() } }
        try waitUntilListening(port: port)
        let r = try Tools.camrec(["--test-pattern", "--codec", "hevc", "--size", "640x360", "--frames", "90", "--keyframe-interval", "30",
                                  "tcp://127.0.0.1:\(port)"])
        XCTAssertEqual(r.status, 0, r.stderr)
        ffmpeg.waitUntilExit()
        Tools.assertEveryFrameAccounted(try Tools.patternCounters(got), frames: 90, output: "tcp://127.0.0.1:\(port)", stderr: r.stderr)
        try assertStreamContract(got, idrEvery: 30, frames: 90, codec: .hevc)
    }

    func testCamrecReceiveDecodesEveryFrameAndKeepsTheSendersBytes() throws {
        let port = Int.random(in: 21_000..<22_000)
        let received = "\(dir)/received.h265", sent = "\(dir)/sent.h265"
        let (receiver, receiverErrors) = try Tools.launch(Tools.camrec, ["receive", "--listen", "127.0.0.1:\(port)", "--frames", "90", received])
        defer { if receiver.isRunning { receiver.terminate() } }
        try waitUntilListening(port: port)
        let r = try Tools.camrec(["--test-pattern", "--codec", "hevc", "--size", "640x360", "--frames", "90", "--keyframe-interval", "30",
                                  "--timing-sei", sent, "tcp://127.0.0.1:\(port)"])
        XCTAssertEqual(r.status, 0, r.stderr)
        receiver.waitUntilExit()
        let log = String(decoding: receiverErrors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(receiver.terminationStatus, 0, log)
        XCTAssertTrue(log.contains("frames=90 idr=3") && log.contains("decoded=90 decode_errors=0"), log)
        XCTAssertTrue(log.contains("latency capture to received"), "the timing note, an H.265 SEI, was read: " + log)
        // The timing notes are stripped again: what was saved is the sender's stream, byte for byte.
        // (--timing-sei put them in the file too.)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: received)), withoutTimingNotes(try Data(contentsOf: URL(fileURLWithPath: sent))))
        try assertStreamContract(received, idrEvery: 30, frames: 90, codec: .hevc)
    }

    /// Waits for a listening socket on `port` without connecting to it (ffmpeg's listener takes one
    /// connection only): the kernel's table says when it is there.
    private func waitUntilListening(port: Int) throws {
        let hex = String(format: ":%04X ", port)
        for _ in 0..<100 {
            for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
                let lines = (try? String(contentsOfFile: table, encoding: .utf8))?.split(separator: "\n") ?? []
                // local_address is the second column, st the fourth; 0A is LISTEN.
                if lines.contains(where: { $0.contains(hex) && $0.split(separator: " ").dropFirst(3).first == "0A" }) { return }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("ffmpeg did not listen on port \(port) within 5 s")
    }

    func testWhatCannotCarryH265IsRefusedBeforeRecording() throws {
        let cases: [([String], String)] = [
            (["--codec", "hevc", "rtmp://127.0.0.1/live/x"], "RTMP (FLV) carries H.264 only; publish H.265 over rtsp:// or srt://"),
            (["--codec", "hevc", "--http", "0", "\(dir)/b.h265"], "--http shows H.264 only"),
            (["--encoder", "vaapi", "\(dir)/d.h264", "\(dir)/e.h265"], "two encodings from one capture run in software"),
            (["--codec", "h264", "\(dir)/f.h265"], "--codec h264: no output takes it"),
        ]
        for (arguments, words) in cases {
            let r = try Tools.camrec(["--test-pattern", "--frames", "5"] + arguments)
            XCTAssertEqual(r.status, 64, "\(arguments): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(words), "\(arguments): \(r.stderr)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "nothing recorded")
    }

    // MARK: - Two encodings from one capture

    func testOneCaptureGivesH264AndH265EachKeepingItsContract() throws {
        let a264 = "\(dir)/a.h264", a265 = "\(dir)/a.h265"
        // A live source: a branch that falls behind skips frames and says so ("libx265 skipped N frames"),
        // and the camera side may drop (dropped=). On a quiet machine neither happens at 640x360 and the
        // exact grid is checked; on a busy one (stress-ng --cpu 1 beside the suite: libx265 skipped 42 of
        // 90, 2026-11-24; 61 with a release build of camrec beside it) each file must hold exactly the frames
        // its branch took, in order, the IDRs no further apart than the interval. Bound: at most 80 skipped.
        let r = try Tools.camrec(["--test-pattern", "--size", "640x360", "--frames", "90", "--keyframe-interval", "30", a264, a265])
        XCTAssertEqual(r.status, 0, r.stderr)
        let dropped = try XCTUnwrap(Int(field("dropped", in: r.stderr, output: a264) ?? ""), r.stderr)
        XCTAssertEqual(try codecName(a264), "h264")
        XCTAssertEqual(try codecName(a265), "hevc")
        for (path, codec, encoderName) in [(a264, VideoCodec.h264, "libx264"), (a265, .hevc, "libx265")] {
            let skipped = skippedFrames(encoderName, in: r.stderr)
            XCTAssertLessThanOrEqual(skipped, 80, "\(encoderName) skipped \(skipped) of 90 (measured 42 and 61 under load): \(r.stderr)")
            let counters = try Tools.patternCounters(path).map { try XCTUnwrap($0, "every picture carries its number") }
            XCTAssertEqual(counters.count, 90 - skipped, "\(path): the frames its branch took")
            XCTAssertEqual(counters, counters.sorted(), "\(path): in order")
            XCTAssertEqual(Set(counters).count, counters.count, "\(path): none twice")
            // Missing numbers: the camera side's drops and this branch's own skips, at most (what either
            // lost after the file's last frame leaves no gap; the exact count is the frames= above).
            XCTAssertLessThanOrEqual(Int(counters.last ?? 0) + 1 - counters.count, dropped + skipped,
                                     "\(path): the numbers missing up to its last frame are at most the \(dropped) dropped and \(skipped) skipped")
            XCTAssertTrue(r.stderr.contains("output=\(path) frames=\(90 - skipped) "), r.stderr)
            if skipped == 0 && dropped == 0 {
                try assertStreamContract(path, idrEvery: 30, frames: 90, codec: codec)
                XCTAssertEqual(counters, (0..<90).map { UInt64($0) })
                XCTAssertTrue(r.stderr.contains("output=\(path) frames=90 idr=3"), r.stderr)
            } else {
                try assertStreamContract(path, frames: 90 - skipped, maximumIDRGap: 30, codec: codec)
            }
        }
    }

    /// N in "libx265 (software) skipped N frames to keep up with the capture", or 0 when no such line.
    private func skippedFrames(_ encoder: String, in log: String) -> Int {
        guard let line = log.split(separator: "\n").first(where: { $0.contains(encoder) && $0.contains(" frames to keep up") }),
              let range = line.range(of: " skipped ") else { return 0 }
        return Int(line[range.upperBound...].prefix { $0.isNumber }) ?? -1
    }

    /// The value of `key=` on the summary line of `output`.
    private func field(_ key: String, in log: String, output: String) -> String? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("output=\(output) ") }),
              let range = line.range(of: " \(key)=") else { return nil }
        return String(line[range.upperBound...].prefix { !$0.isWhitespace })
    }

    func testFromAFileBothEncodingsGetEveryFrame() throws {
        // A file source waits for the slower encoder instead of skipping: nothing is lost in either.
        let input = "\(dir)/in.yuv"
        let made = try Tools.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-frames:v", "75",
                                            "-pix_fmt", "yuyv422", "-f", "rawvideo", input])
        XCTAssertEqual(made.status, 0, made.stderr)
        let r = try Tools.camrec(["--input", input, "--input-format", "yuyv", "--size", "640x360", "--keyframe-interval", "25",
                                  "\(dir)/b.h264", "--codec", "hevc", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let stdout = "\(dir)/b-stdout.h265"
        try r.stdout.write(to: URL(fileURLWithPath: stdout))
        try assertStreamContract("\(dir)/b.h264", idrEvery: 25, frames: 75, codec: .h264)
        try assertStreamContract(stdout, idrEvery: 25, frames: 75, codec: .hevc)
    }
}
