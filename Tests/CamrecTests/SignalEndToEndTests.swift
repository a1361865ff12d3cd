import Foundation
import XCTest

/// Ctrl-C and SIGTERM mid-recording leave a complete, decodable file under its final name.
final class SignalEndToEndTests: XCTestCase {
    func testSIGINTFinishesTheFile() throws { try stopMidRecording(with: SIGINT) }
    func testSIGTERMFinishesTheFile() throws { try stopMidRecording(with: SIGTERM) }

    private func stopMidRecording(with signal: Int32) throws {
        try requireFFmpeg()
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = "\(dir)/stopped.h264"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.camrec)
        process.arguments = ["--test-pattern", "--size", "640x360", "--keyframe-interval", "15", out]
        let err = Pipe()
        process.standardError = err
        try process.run()
        // Wait until recording has visibly started (the temporary file exists and grows).
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            if let partial = files.first(where: { $0.hasSuffix(".partial") }),
               let size = try? FileManager.default.attributesOfItem(atPath: "\(dir)/\(partial)")[.size] as? Int, size > 20_000 {
                break
            }
            usleep(100_000)
        }
        usleep(700_000)
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        let frames = try Tools.decodedFrameCount(out)
        // Nothing dropped at 640x360: the file holds every frame from 0 to the last, in order.
        XCTAssertTrue(stderr.contains("dropped=0"), stderr)
        XCTAssertEqual(try Tools.patternCounters(out), (0..<UInt64(frames)).map { $0 }, stderr)
        XCTAssertEqual(try Tools.decodeErrors(out), "")
        XCTAssertTrue(stderr.contains("frames=\(frames)"), "the summary counts what the file holds: \(stderr)")
        try assertStreamContract(out, idrEvery: 15, frames: frames)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["stopped.h264"])
    }
}
