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
        XCTAssertEqual(try Tools.patternCounters(out), (0..<60).map { UInt64($0) })
        try assertStreamContract(out, idrEvery: 20, frames: 60, codec: .hevc)
    }

    func testStdoutCarriesTheSameContract() throws {
        let r = try Tools.camrec(["--test-pattern", "--codec", "hevc", "--size", "640x360", "--frames", "45", "--keyframe-interval", "15", "-"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = "\(dir)/stdout.h265"
        try r.stdout.write(to: URL(fileURLWithPath: out))
        XCTAssertEqual(try Tools.patternCounters(out), (0..<45).map { UInt64($0) })
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
        XCTAssertEqual(try Tools.patternCounters(got), (0..<90).map { UInt64($0) }, r.stderr)
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
        // 640x360 so libx265 keeps up on a busy 2-core machine: a branch that falls behind skips frames
        // (said on stderr), which would make the frame counts below depend on the load.
        let r = try Tools.camrec(["--test-pattern", "--size", "640x360", "--frames", "90", "--keyframe-interval", "30", a264, a265])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("skipped"), r.stderr)
        XCTAssertEqual(try codecName(a264), "h264")
        XCTAssertEqual(try codecName(a265), "hevc")
        try assertStreamContract(a264, idrEvery: 30, frames: 90, codec: .h264)
        try assertStreamContract(a265, idrEvery: 30, frames: 90, codec: .hevc)
        // One capture: the same frames, numbered alike, in both.
        XCTAssertEqual(try Tools.patternCounters(a264), (0..<90).map { UInt64($0) })
        XCTAssertEqual(try Tools.patternCounters(a265), (0..<90).map { UInt64($0) })
        XCTAssertTrue(r.stderr.contains("output=\(a264) frames=90 idr=3"), r.stderr)
        XCTAssertTrue(r.stderr.contains("output=\(a265) frames=90 idr=3"), r.stderr)
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
