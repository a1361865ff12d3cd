import Foundation
import XCTest

/// `camrec inspect` on H.265 streams that FFmpeg's libx265 wrote, compared with what ffprobe says
/// about the same files.
final class InspectHEVCEndToEndTests: ScratchDirectoryTestCase {

    private func ffprobe(_ path: String, _ entries: String) throws -> String {
        let r = try Tools.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=\(entries)",
                                          "-of", "default=noprint_wrappers=1", path])
        return r.stdoutText
    }

    func testLibx265StreamsAreDescribedAsFfprobeSeesThemAndTheirFaultsNamed() throws {
        for (size, rate, pixels, gop) in [("640x360", "30", "yuv420p", "keyint=30:open-gop=0"),
                                          ("1282x722", "30000/1001", "yuv420p10le", "keyint=15")] {
            let out = "\(dir)/\(size).h265"
            let made = try Tools.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=\(size):rate=\(rate)",
                                                "-frames:v", "40", "-c:v", "libx265", "-x265-params", "log-level=none:\(gop)",
                                                "-pix_fmt", pixels, out])
            XCTAssertEqual(made.status, 0, made.stderr)
            let probed = try ffprobe(out, "profile,width,height,level,r_frame_rate,pix_fmt")
            let inspect = try Tools.camrec(["inspect", "--summary", out])
            let text = inspect.stdoutText
            XCTAssertEqual(inspect.status, 1, "libx265's layout breaks the contract: " + text)
            let field = { (name: String) in probed.split(separator: "\n").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) } ?? "?" }
            // ffprobe: profile=Main or Main 10, level=30×level, width/height displayed, r_frame_rate=30/1 or 30000/1001.
            let level = Int(field("level")) ?? 0
            let levelName = level % 30 == 0 ? "\(level / 30)" : "\(level / 30).\(level % 30 / 3)"
            XCTAssertTrue(text.contains("video: H.265/HEVC \(field("profile")) profile, Main tier, level \(levelName), "
                                        + "\(field("width"))x\(field("height")), 4:2:0 \(pixels.hasSuffix("10le") ? 10 : 8)-bit"), probed + text)
            XCTAssertTrue(text.contains(rate == "30" ? ", 30 fps" : ", 29.97 fps"), text)
            XCTAssertEqual(text.contains("40 frames"), true, text)
            XCTAssertTrue(text.contains("have a 3-byte start code"), text)
            XCTAssertTrue(text.contains("SEI stands between the PPS and the IDR slice"), text)
            // An open GOP (the default) has CRA pictures; a closed one only IDRs, every 30 frames.
            XCTAssertEqual(text.contains("random-access pictures are not IDRs"), !gop.contains("open-gop=0"), text)
            if gop.contains("open-gop=0") { XCTAssertTrue(text.contains("IDR every 30 frames (frames 0, 30)"), text) }
        }
    }
}
