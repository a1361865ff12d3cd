import Foundation
import XCTest

/// camrec opens libavcodec, libavformat and libavutil only when a recording needs them (issue 26:
/// their ~130 libraries are most of a raw recording's memory otherwise). What a running camrec has
/// loaded is read from the kernel's view of it, /proc/PID/maps, while it records.
final class LibraryLoadingTests: ScratchDirectoryTestCase {
    /// Records `output` from the test pattern for 4 s; returns the names of the shared libraries the
    /// process had mapped once its output (still a .partial file) held data, and the output's decoded frame count.
    private func librariesWhileRecording(_ output: String, _ options: [String] = []) throws -> (libraries: Set<String>, frames: Int) {
        let (process, stderr) = try Tools.launch(Tools.camrec, ["--test-pattern", "--size", "320x240", "--fps", "30",
                                                                 "--frames", "120", "--overwrite"] + options + [output], cwd: dir)
        let path = "\(dir)/\(output)"
        var libraries = Set<String>()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning, Date() < deadline {
            // camrec writes NAME.camrec-PID.partial and renames it at the end.
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            let size = names.filter { $0.hasPrefix(output) }.compactMap {
                ((try? FileManager.default.attributesOfItem(atPath: "\(dir)/\($0)"))?[.size] as? NSNumber)?.intValue
            }.max() ?? 0
            // /proc files say they are empty: read to the end rather than by their size.
            if size > 0, let data = FileHandle(forReadingAtPath: "/proc/\(process.processIdentifier)/maps")?.readDataToEndOfFile() {
                let maps = String(decoding: data, as: UTF8.self)
                libraries = Set(maps.split(separator: "\n").compactMap { $0.split(separator: "/").last.map(String.init) }
                    .filter { $0.contains(".so") })
                break
            }
            usleep(20_000)
        }
        process.waitUntilExit()
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, log)
        XCTAssertFalse(libraries.isEmpty, "read camrec's mappings while it recorded \(output)")
        return (libraries, try Tools.decodedFrameCount(path))
    }

    private func loaded(_ prefix: String, _ libraries: Set<String>) -> Bool {
        libraries.contains { $0.hasPrefix(prefix) }
    }

    /// libva and libv4lconvert are opened on first use too (issue 51: their pages count in a raw recording's peak).
    func testARawH264RecordingLoadsLibx264ButNoLibavLibraryLibvaOrLibv4lconvert() throws {
        let (libraries, frames) = try librariesWhileRecording("raw.h264")
        XCTAssertEqual(frames, 120, "ffprobe decodes every frame")
        XCTAssertTrue(loaded("libx264.so", libraries), "libx264 encodes it: \(libraries.sorted())")
        for library in ["libavcodec.so", "libavformat.so", "libavutil.so", "libx265.so", "libva.so", "libv4lconvert.so"] {
            XCTAssertFalse(loaded(library, libraries), "\(library) loaded for a raw H.264 recording")
        }
    }

    func testARawH265RecordingLoadsLibx265ButNoLibavLibrary() throws {
        let (libraries, frames) = try librariesWhileRecording("raw.h265", ["--codec", "hevc"])
        XCTAssertEqual(frames, 120, "ffprobe decodes every frame")
        XCTAssertTrue(loaded("libx265.so", libraries), "libx265 encodes it: \(libraries.sorted())")
        for library in ["libavcodec.so", "libavformat.so", "libavutil.so"] {
            XCTAssertFalse(loaded(library, libraries), "\(library) loaded for a raw H.265 recording")
        }
    }

    /// An MJPEG source decodes with libjpeg-turbo, not libavcodec: a raw H.264 recording from
    /// `--input - --input-format mjpeg` maps no libav library. The JPEGs come through a pipe, half of
    /// them first, so the mappings are read while camrec is still recording.
    func testAnMJPEGRecordingDecodesWithLibjpegAndLoadsNoLibavLibrary() throws {
        let jpegs = try Tools.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "60",
                                             "-pix_fmt", "yuvj422p", "-f", "mjpeg", "-"]).stdout
        XCTAssertGreaterThan(jpegs.count, 60 * 1000, "ffmpeg wrote 60 JPEGs")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.camrec)
        process.arguments = ["--input", "-", "--input-format", "mjpeg", "--fps", "30", "--overwrite", "mjpeg.h264"]
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        let input = Pipe(), stderr = Pipe()
        process.standardInput = input
        process.standardError = stderr
        try process.run()
        input.fileHandleForWriting.write(jpegs.prefix(jpegs.count / 2))
        var libraries = Set<String>()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning, Date() < deadline {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            let size = names.filter { $0.hasPrefix("mjpeg.h264") }.compactMap {
                ((try? FileManager.default.attributesOfItem(atPath: "\(dir)/\($0)"))?[.size] as? NSNumber)?.intValue
            }.max() ?? 0
            if size > 0, let data = FileHandle(forReadingAtPath: "/proc/\(process.processIdentifier)/maps")?.readDataToEndOfFile() {
                libraries = Set(String(decoding: data, as: UTF8.self).split(separator: "\n")
                    .compactMap { $0.split(separator: "/").last.map(String.init) }.filter { $0.contains(".so") })
                break
            }
            usleep(20_000)
        }
        input.fileHandleForWriting.write(jpegs.dropFirst(jpegs.count / 2))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, log)
        XCTAssertEqual(try Tools.decodedFrameCount("\(dir)/mjpeg.h264"), 60, "ffprobe decodes every frame")
        XCTAssertFalse(libraries.isEmpty, "read camrec's mappings while it recorded")
        XCTAssertTrue(loaded("libjpeg.so", libraries), "libjpeg decodes it: \(libraries.sorted())")
        for library in ["libavcodec.so", "libavformat.so", "libavutil.so"] {
            XCTAssertFalse(loaded(library, libraries), "\(library) loaded for an MJPEG recording into raw H.264")
        }
    }

    /// An MP4 recording without sound is written by camrec's own writer (issue 51): it maps no libav
    /// library, and ffprobe decodes every frame of it.
    func testAnMP4RecordingWithoutSoundLoadsNoLibavLibrary() throws {
        for (output, options, encoder) in [("file.mp4", [], "libx264.so"), ("hevc.mp4", ["--codec", "hevc"], "libx265.so")] {
            let (libraries, frames) = try librariesWhileRecording(output, options)
            XCTAssertEqual(frames, 120, "ffprobe decodes every frame of \(output)")
            XCTAssertTrue(loaded(encoder, libraries), "\(encoder) encodes \(output): \(libraries.sorted())")
            for library in ["libavformat.so", "libavcodec.so", "libavutil.so"] {
                XCTAssertFalse(loaded(library, libraries), "\(library) loaded for \(output), an MP4 recording without sound")
            }
        }
    }

    /// The same probe sees libavformat where a recording needs it: a Matroska file.
    func testAMatroskaRecordingLoadsLibavformatWhenItNeedsIt() throws {
        let (libraries, frames) = try librariesWhileRecording("file.mkv")
        XCTAssertEqual(frames, 120, "ffprobe decodes every frame")
        for library in ["libavformat.so", "libavcodec.so", "libavutil.so", "libx264.so"] {
            XCTAssertTrue(loaded(library, libraries), "\(library) not loaded for a Matroska recording: \(libraries.sorted())")
        }
    }

    /// The file behind the library `prefix` names, as the loader finds it (ldconfig), for a mount
    /// namespace to lay an empty file over.
    private func libraryFile(_ prefix: String) throws -> String {
        let linked = try Tools.run("ldconfig", ["-p"]).stdoutText.split(separator: "\n")
            .first { $0.contains(prefix) && $0.contains("x86-64") }
        let library = try XCTUnwrap(linked.flatMap { $0.split(separator: " ").last.map(String.init) }, "\(prefix) in ldconfig -p")
        return URL(fileURLWithPath: library).resolvingSymlinksInPath().path
    }

    /// Records 10 test-pattern frames into `output` with `library` unreadable, for this camrec only.
    private func record(_ output: String, hiding library: String, codec: String = "h264") throws -> ProcessResult {
        try Tools.run("unshare", ["-m", "sh", "-c", "mount --bind /dev/null \"$1\" && exec \"$2\" --test-pattern --size 320x240 --frames 10 --codec \"$4\" --overwrite \"$3\"",
                                  "sh", library, Tools.camrec, output, codec], cwd: dir)
    }

    /// A recording that needs the hidden library ends before any file exists, with 73 and one line naming the package.
    private func assertEndsBeforeAnyFile(_ result: ProcessResult, naming package: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(result.status, 73, result.stderr, file: file, line: line)
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("camrec: error:") }
        XCTAssertEqual(errors.count, 1, result.stderr, file: file, line: line)
        XCTAssertTrue(errors.first?.contains("install Debian's \(package)") == true, result.stderr, file: file, line: line)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("broken") }, [],
                       "no file, not even a .partial", file: file, line: line)
    }

    /// A broken installation: libavformat unreadable (a mount namespace lays an empty file over it, for
    /// this camrec only). A Matroska recording ends before it creates any file, in one line naming the
    /// package, with 73; a raw H.264 recording and an MP4 one without sound, which need no libav*, still record.
    func testAMissingLibavformatEndsAMatroskaRecordingBeforeAnyFileAndRawAndMP4StillRecord() throws {
        try XCTSkipUnless(getuid() == 0 && Tools.which("unshare") != nil, "needs root and unshare for a mount namespace")
        let library = try libraryFile("libavformat.so.")
        try assertEndsBeforeAnyFile(try record("broken.mkv", hiding: library), naming: "libavformat")
        for output in ["still.h264", "still.mp4"] {
            let result = try record(output, hiding: library)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try Tools.decodedFrameCount("\(dir)/\(output)"), 10, output)
        }
    }

    /// libx265 unreadable the same way: an H.265 recording ends before any file, in one line naming the
    /// package, with 73; H.264, which never opens libx265, still records.
    func testAMissingLibx265EndsAnH265RecordingBeforeAnyFileAndH264StillRecords() throws {
        try XCTSkipUnless(getuid() == 0 && Tools.which("unshare") != nil, "needs root and unshare for a mount namespace")
        let library = try libraryFile("libx265.so.")
        try assertEndsBeforeAnyFile(try record("broken.h265", hiding: library, codec: "hevc"), naming: "libx265-")
        let h264 = try record("still.h264", hiding: library)
        XCTAssertEqual(h264.status, 0, h264.stderr)
        XCTAssertEqual(try Tools.decodedFrameCount("\(dir)/still.h264"), 10)
    }

    /// libva and libv4lconvert unreadable the same way, each in turn: a test-pattern recording, which needs
    /// neither, still records every frame (linked as before, camrec could not start at all). Their one line
    /// when needed: vaapi-host (libva) and vm-capture (libv4lconvert) check it where a driver needs them.
    func testAMissingLibvaOrLibv4lconvertStillLetsARawH264RecordingRecord() throws {
        try XCTSkipUnless(getuid() == 0 && Tools.which("unshare") != nil, "needs root and unshare for a mount namespace")
        for prefix in ["libva.so.2", "libv4lconvert.so.0"] {
            let result = try record("still.h264", hiding: try libraryFile(prefix))
            XCTAssertEqual(result.status, 0, "\(prefix) hidden: \(result.stderr)")
            XCTAssertEqual(try Tools.decodedFrameCount("\(dir)/still.h264"), 10, "\(prefix) hidden")
        }
    }
}
