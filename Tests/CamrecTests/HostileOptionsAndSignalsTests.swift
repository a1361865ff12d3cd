import Foundation
import XCTest

/// Values a hostile or careless user gives, and signals that come at awkward times: a usage
/// error (64) and no file for every out-of-range number; a second interrupt that stops waiting
/// for a stuck stdout but still finishes the file (130); a SIGTERM during start-up that stops
/// cleanly instead of killing camrec.
final class HostileOptionsAndSignalsTests: XCTestCase {
    /// Every numeric option with values it must refuse at parse time. Once, `--duration inf`
    /// and `--keyframe-interval 2147483648` trapped converting to integers (SIGILL, empty file).
    private let refused: [(option: String, values: [String])] = [
        ("--fps", ["0", "241"]), ("--frames", ["0"]), ("--duration", ["0"]),
        ("--keyframe-interval", ["0", "2147483648"]), ("--qp", ["52"]), ("--slices", ["0", "33"]),
        ("--threads", ["65"]), ("--wait", []), ("--segment", ["0.4"]), ("--keep-files", ["0"]),
        ("--stall-timeout", ["0", "0.4", "3601"]),
    ]
    /// Refused by every one of them: negative, non-finite, absurdly large, past Int64.
    private let alwaysRefused = ["-1", "inf", "-inf", "nan", "1e300", "9223372036854775808", "-9223372036854775809"]

    func testEveryNumericOptionRefusesOutOfRangeValuesWithStatus64AndNoFile() throws {
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (option, values) in refused {
            for value in values + alwaysRefused {
                let r = try Tools.camrec(["--test-pattern", "--frames", "5", option, value, "\(dir)/out-{n}.h264"])
                XCTAssertEqual(r.status, 64, "\(option) \(value): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains(option), "\(option) \(value): the message names the option: \(r.stderr)")
                XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "\(option) \(value): one line: \(r.stderr)")
                XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "\(option) \(value)")
            }
        }
        for (option, value) in [("--keep-for", "1e300d"), ("--keep-for", "infs"), ("--bitrate", "inf"), ("--listen", "70000"),
                                ("--listen", "-1"), ("--preset", "bogus"), ("--size", "99999x99999")] {
            let r = try Tools.camrec(["--test-pattern", "--frames", "5", option, value, "\(dir)/out-{n}.h264"])
            XCTAssertEqual(r.status, 64, "\(option) \(value): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("70000:9982"), r.stderr)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "\(option) \(value)")
        }
        // --on-camera-lost takes exit, wait or wait=SECONDS: a bad number is refused like any other.
        for value in ["wait=0", "wait=", "wait=x", "later", "WAIT", "exit=5"] + alwaysRefused.map({ "wait=\($0)" }) {
            let r = try Tools.camrec(["--device", "/dev/video0", "--frames", "5", "--on-camera-lost", value, "\(dir)/out-{n}.h264"])
            XCTAssertEqual(r.status, 64, "--on-camera-lost \(value): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--on-camera-lost"), "--on-camera-lost \(value): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "--on-camera-lost \(value): one line: \(r.stderr)")
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "--on-camera-lost \(value)")
        }
        // It is for a camera: the test pattern and a file cannot go away; --on-camera-change needs wait.
        for arguments in [["--test-pattern", "--on-camera-lost", "wait"], ["--device", "/dev/video0", "--on-camera-change", "true"]] {
            let r = try Tools.camrec(arguments + ["--frames", "5", "\(dir)/out.h264"])
            XCTAssertEqual(r.status, 64, "\(arguments): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--on-camera-"), "\(arguments): \(r.stderr)")
        }
        let stall = try Tools.camrec(["--test-pattern", "--stall-timeout", "5", "--frames", "5", "\(dir)/out.h264"])
        XCTAssertEqual(stall.status, 64, stall.stderr)
        XCTAssertTrue(stall.stderr.contains("--stall-timeout is for a camera (--device)"), stall.stderr)
        for (option, value) in [("--frames", "-1"), ("--duration", "inf"), ("--duration", "nan")] {
            let r = try Tools.camrec(["receive", "--listen", "0", option, value, "\(dir)/copy.h264"])
            XCTAssertEqual(r.status, 64, "receive \(option) \(value): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(option), r.stderr)
        }
    }

    /// `(camrec --test-pattern - out.h264) | sleep …`: stdout is a pipe nobody reads. One SIGINT
    /// waits for it (nothing may be thrown away); a second one stops waiting: the file is finished
    /// and renamed with every frame encoded, stdout is abandoned, and camrec exits 130.
    func testSecondInterruptFinishesTheFileAndStopsWaitingForAStuckStdout() throws {
        try requireFFmpeg()
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = "\(dir)/kept.h264"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.camrec)
        process.arguments = ["--test-pattern", "--size", "1280x720", "-", out]
        let stuck = Pipe()  // never read
        let err = Pipe()
        process.standardOutput = stuck
        process.standardError = err
        try process.run()
        // The pipe (64 KiB) is full long before 1 MB is in the file.
        XCTAssertTrue(waitForPartial(in: dir, over: 1_000_000), "recording never started")
        kill(process.processIdentifier, SIGINT)
        kill(process.processIdentifier, SIGTERM)
        guard exits(process, withinSeconds: 60, orFail: "camrec still waited for stdout 60 s after two interrupts") else { return }
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 130, stderr)
        XCTAssertTrue(stderr.contains("interrupted twice; finishing the files without waiting for stdout"), stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["kept.h264"], "renamed into place")
        let frames = try Tools.decodedFrameCount(out)
        XCTAssertTrue(stderr.contains("output=\(out) frames=\(frames) "), "every frame encoded is in the file: \(stderr)")
        XCTAssertEqual(try Tools.decodeErrors(out), "")
    }

    /// A SIGTERM that arrives while camrec starts, before anything is recorded, ends it cleanly:
    /// exit 0 and no `.partial` left. It is sent as soon as /proc shows camrec catching SIGTERM (the
    /// handler `main` installs on its first line), so it is pending before the recorder exists.
    /// (Not "blocking" it: the main thread shows the signals blocked only until `main` first suspends,
    /// after which it waits in libdispatch's `sigsuspend` with an empty mask; beside the VM lane that
    /// window once passed between two reads of /proc.)
    func testSIGTERMBeforeRecordingStartsStopsCleanly() throws {
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.camrec)
        process.arguments = ["--test-pattern", "--size", "320x240", "\(dir)/early.h264"]
        let err = Pipe()
        process.standardError = err
        try process.run()
        let sigterm: UInt64 = 1 << (UInt64(SIGTERM) - 1)
        var caught = false
        let deadline = Date().addingTimeInterval(20)
        while !caught && process.isRunning && Date() < deadline {
            let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
            if let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
               let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16), mask & sigterm != 0 {
                caught = true
            }
        }
        kill(process.processIdentifier, SIGTERM)
        guard exits(process, withinSeconds: 30, orFail: "camrec went on recording after a SIGTERM sent during start-up") else { return }
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(caught, "never saw camrec catch SIGTERM")
        XCTAssertEqual(process.terminationReason, .exit, "killed by the signal: \(stderr)")
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertFalse(left.contains { $0.hasSuffix(".partial") }, "no temporary file left: \(left)")
    }

    /// `timeout 60 camrec receive …` then one kill of `timeout`: camrec gets SIGTERM twice. Once
    /// it then left only the `.partial`; now the file is finished with what arrived, then 130.
    func testReceiveFinishesItsFileOnTwoSIGTERMs() throws {
        try requireFFmpeg()
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Port 0: the kernel picks a free one and camrec names it. A fixed port in the ephemeral range
        // (32768-60999) was once taken by another test's outgoing connection (CI, "Address already in use").
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Tools.camrec)
        receiver.arguments = ["receive", "--listen", "127.0.0.1:0", "\(dir)/copy.h264"]
        let err = Pipe()
        receiver.standardError = err
        try receiver.run()
        defer { if receiver.isRunning { kill(receiver.processIdentifier, SIGKILL) } }
        let (listening, firstLines) = listeningPort(in: err)
        guard let port = listening else { return XCTFail("camrec receive named no port it listens on: \(firstLines)") }
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: Tools.camrec)
        sender.arguments = ["--test-pattern", "--size", "640x360", "--duration", "60", "tcp://127.0.0.1:\(port)"]
        sender.standardError = FileHandle.nullDevice
        try sender.run()
        defer { if sender.isRunning { kill(sender.processIdentifier, SIGKILL) } }
        XCTAssertTrue(waitForPartial(in: dir, over: 100_000), "nothing received")
        kill(receiver.processIdentifier, SIGTERM)
        // Two SIGTERMs sent back to back merge into one while pending: send the second once
        // camrec has taken the first (/proc no longer shows it pending).
        XCTAssertTrue(signalTaken(SIGTERM, by: receiver), "the first SIGTERM stayed pending")
        kill(receiver.processIdentifier, SIGTERM)
        guard exits(receiver, withinSeconds: 60, orFail: "camrec receive did not exit after two SIGTERMs") else { return }
        let stderr = firstLines + String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(receiver.terminationStatus, 130, stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["copy.h264"], stderr)
        let frames = try Tools.decodedFrameCount("\(dir)/copy.h264")
        XCTAssertGreaterThan(frames, 0)
        XCTAssertTrue(stderr.contains("frames=\(frames) "), "the summary counts what the file holds: \(stderr)")
        XCTAssertEqual(try Tools.decodeErrors("\(dir)/copy.h264"), "")
    }

    /// Reads camrec's standard error up to its "waiting for a sender on tcp://HOST:PORT" line: that
    /// port, and what was read (nil and all of it when camrec ended before saying so).
    private func listeningPort(in pipe: Pipe) -> (port: Int?, read: String) {
        let fd = pipe.fileHandleForReading.fileDescriptor
        var bytes: [UInt8] = []
        var lineStart = 0
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            bytes.append(byte)
            guard byte == UInt8(ascii: "\n") else { continue }
            let line = String(decoding: bytes[lineStart...], as: UTF8.self)
            lineStart = bytes.count
            if line.contains("waiting for a sender on tcp://"), let port = line.split(separator: ":").last {
                return (Int(port.trimmingCharacters(in: .whitespacesAndNewlines)), String(decoding: bytes, as: UTF8.self))
            }
        }
        return (nil, String(decoding: bytes, as: UTF8.self))
    }

    /// Waits until `signal` is no longer pending for the process (its watcher took it).
    private func signalTaken(_ signal: Int32, by process: Process) -> Bool {
        let bit: UInt64 = 1 << (UInt64(signal) - 1)
        for _ in 0..<20_000 {
            let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("ShdPnd:") }),
                  let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
            if mask & bit == 0 { return true }
            usleep(1_000)
        }
        return false
    }

    /// Bounded waits, so a camrec that never exits fails its test instead of hanging the run.
    private func exits(_ process: Process, withinSeconds seconds: Int, orFail message: String) -> Bool {
        for _ in 0..<(seconds * 10) where process.isRunning { usleep(100_000) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            XCTFail(message)
            return false
        }
        process.waitUntilExit()
        return true
    }

    private func waitForPartial(in dir: String, over bytes: Int) -> Bool {
        for _ in 0..<600 {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            if let partial = files.first(where: { $0.hasSuffix(".partial") }),
               let size = try? FileManager.default.attributesOfItem(atPath: "\(dir)/\(partial)")[.size] as? Int, size > bytes {
                return true
            }
            usleep(100_000)
        }
        return false
    }
}

/// Names: a file this run wrote is never replaced nor blocks the next one; FIFOs and devices are
/// never replaced; long names and names with newlines work and keep the summary one line each.
final class HostileNamesTests: XCTestCase {
    /// SIGHUP twice with a fixed name: three files, a.h264, a-2.h264, a-3.h264, holding every
    /// frame once between them (the burned-in counter runs 0…149 across them in order).
    func testSIGHUPWithAFixedNameContinuesInNewNamesAndLosesNothing() throws {
        try requireFFmpeg()
        for overwrite in [false, true] {
            let dir = try makeScratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Tools.camrec)
            process.arguments = ["--test-pattern", "--size", "640x360", "--frames", "150"] + (overwrite ? ["--overwrite"] : [])
                + ["\(dir)/a.h264"]
            let err = Pipe()
            process.standardError = err
            try process.run()
            for expectedFiles in [0, 1] {
                // Wait for the current temporary file to hold some frames, then rotate.
                for _ in 0..<300 {
                    let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
                    if files.filter({ $0.hasSuffix(".h264") }).count == expectedFiles,
                       let partial = files.first(where: { $0.hasSuffix(".partial") }),
                       let size = try? FileManager.default.attributesOfItem(atPath: "\(dir)/\(partial)")[.size] as? Int, size > 20_000 {
                        break
                    }
                    usleep(50_000)
                }
                kill(process.processIdentifier, SIGHUP)
            }
            process.waitUntilExit()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertEqual(process.terminationStatus, 0, stderr)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["a-2.h264", "a-3.h264", "a.h264"], stderr)
            var counters: [Int] = []
            for name in ["a.h264", "a-2.h264", "a-3.h264"] {
                counters += try burnedInCounters("\(dir)/\(name)")
            }
            // Every recorded frame in exactly one file, in order. The pattern is paced like a camera,
            // so a loaded machine may drop frames at capture: those are counted (dropped=), and the
            // counters then skip exactly that many numbers.
            let dropped = stderr.split(separator: "\n").last { $0.contains("dropped=") }
                .flatMap { $0.split(separator: " ").first { $0.hasPrefix("dropped=") } }
                .flatMap { Int($0.dropFirst(8)) } ?? -1
            XCTAssertEqual(counters.count, 150, "overwrite \(overwrite): \(stderr)")
            XCTAssertEqual(counters, counters.sorted(), "in order")
            XCTAssertEqual(Set(counters).count, counters.count, "no frame twice")
            XCTAssertEqual(counters.first, 0)
            XCTAssertEqual((counters.last ?? 0) + 1, 150 + dropped, "only the counted drops are missing: \(stderr)")
        }
    }

    func testFIFOsAndDevicesAreNeverReplaced() throws {
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        XCTAssertEqual(mkfifo("\(dir)/fifo", 0o644), 0)
        XCTAssertEqual(mknod("\(dir)/null", S_IFCHR | 0o644, (1 << 8) | 3), 0, "mknod needs root")
        for (name, kind) in [("fifo", "a FIFO"), ("null", "a character device")] {
            for overwrite in [[], ["--overwrite"]] {
                let r = try Tools.camrec(["--test-pattern", "--frames", "3"] + overwrite + ["\(dir)/\(name)"])
                XCTAssertEqual(r.status, 75, r.stderr)
                XCTAssertTrue(r.stderr.contains("is \(kind)"), r.stderr)
                XCTAssertTrue(r.stderr.contains("not a regular file"), r.stderr)
                XCTAssertFalse(r.stderr.contains("pass --overwrite"), r.stderr)
            }
        }
        var st = stat()
        XCTAssertEqual(stat("\(dir)/fifo", &st), 0); XCTAssertEqual(st.st_mode & S_IFMT, S_IFIFO)
        XCTAssertEqual(stat("\(dir)/null", &st), 0); XCTAssertEqual(st.st_mode & S_IFMT, S_IFCHR)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["fifo", "null"])
    }

    func testALongNameAndANewlineInANameWork() throws {
        let dir = try makeScratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let long = String(repeating: "x", count: 250) + ".h264"  // 255 bytes: the most a name may have
        var r = try Tools.camrec(["--test-pattern", "--size", "320x240", "--frames", "3", "\(dir)/\(long)"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/\(long)"))
        r = try Tools.camrec(["--test-pattern", "--size", "320x240", "--frames", "3", "\(dir)/new\nline.h264"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let finished = r.stderr.split(separator: "\n").filter { $0.contains("finished") }
        XCTAssertEqual(finished.count, 1, r.stderr)
        XCTAssertTrue(finished.first?.contains("output=\"\(dir)/new\\nline.h264\" frames=3") ?? false, r.stderr)
    }

    /// The test pattern's counter, read from ffmpeg's decode: at (16, 16), a white marker block,
    /// 32 blocks of 16x16 (most significant bit first, white for 1), another white marker.
    private func burnedInCounters(_ path: String) throws -> [Int] {
        let width = 34 * 16
        let r = try Tools.run("ffmpeg", ["-v", "error", "-i", path, "-vf", "crop=\(width):16:16:16,format=gray", "-f", "rawvideo", "-"])
        let picture = width * 16
        guard !r.stdout.isEmpty, r.stdout.count % picture == 0 else { return [] }
        let bytes = [UInt8](r.stdout)
        return stride(from: 0, to: bytes.count, by: picture).map { start in
            func white(_ block: Int) -> Bool { bytes[start + 8 * width + 16 * block + 8] > 128 }
            guard white(0), white(33) else { return -1 }
            var value = 0
            for bit in 0..<32 { value = value << 1 | (white(1 + bit) ? 1 : 0) }
            return value
        }
    }
}
