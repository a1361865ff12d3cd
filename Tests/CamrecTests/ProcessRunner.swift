import Capture
import Frames
import Foundation
import XCTest

/// Runs the built camrec and independent tools (ffmpeg, ffprobe) for end-to-end tests.
struct ProcessResult {
    var status: Int32
    var stdout: Data
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

enum Tools {
    /// The camrec binary SwiftPM built beside this test bundle.
    static var camrec: String {
        if let path = ProcessInfo.processInfo.environment["CAMREC_BINARY"] { return path }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("camrec").path
    }

    static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: FileHandle? = nil, cwd: String? = nil,
                    environment: [String: String]? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : (which(executable) ?? executable))
        process.arguments = arguments
        if let cwd { process.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = stdin ?? FileHandle.nullDevice
        try process.run()
        // Read both pipes while it runs so a chatty process can't block on a full pipe.
        let errBox = DataBox()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { errBox.set(err.fileHandleForReading.readDataToEndOfFile()); group.leave() }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        group.wait()
        let errData = errBox.get()
        return ProcessResult(status: process.terminationStatus, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Starts a process in the background with its stderr in a pipe (read it after it ends).
    static func launch(_ executable: String, _ arguments: [String], cwd: String? = nil) throws -> (process: Process, stderr: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : (which(executable) ?? executable))
        process.arguments = arguments
        if let cwd { process.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        process.standardInput = FileHandle.nullDevice
        let stderr = Pipe()
        process.standardError = stderr
        try process.run()
        return (process, stderr)
    }

    static func camrec(_ arguments: [String], cwd: String? = nil) throws -> ProcessResult {
        try run(camrec, arguments, cwd: cwd)
    }

    /// Frames ffprobe decodes from an H.264 file.
    static func decodedFrameCount(_ path: String) throws -> Int {
        let r = try run("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                    "stream=nb_read_frames", "-of", "csv=p=0", path])
        return Int(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Indices of the frames ffprobe's decoder calls key frames.
    static func keyFrameIndices(_ path: String) throws -> [Int] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=key_frame",
                                    "-of", "csv=p=0", path])
        return r.stdoutText.split(separator: "\n").enumerated().compactMap { $0.element.hasPrefix("1") ? $0.offset : nil }
    }

    /// Pairs decoded and source frames by number: the H.264 stream's VUI says 30 fps while
    /// rawvideo defaults to 25, and timestamp pairing would compare different frames.
    static let psnrFilter = "[0:v]settb=1/30,setpts=N[a];[1:v]settb=1/30,setpts=N[b];[a][b]psnr"

    /// The average PSNR ffmpeg's psnr filter printed ("inf" for identical pictures).
    static func averagePSNR(_ log: String) -> Double? {
        guard let range = log.range(of: #"average:([0-9.]+|inf)"#, options: .regularExpression) else { return nil }
        let value = log[range].dropFirst("average:".count)
        return value == "inf" ? .infinity : Double(value)
    }

    /// The burned-in frame number of every decoded frame of a --test-pattern recording (nil where the
    /// markers are not found, or a block is neither clearly black nor clearly white). The frame must
    /// be at least 576 pixels wide and 32 high. Read by `readPatternCounter`, not by camrec's own
    /// `TestPatternSource.readCounter`: a pattern drawn and read back wrongly in the same way by the
    /// product would pass its own reader.
    static func patternCounters(_ path: String) throws -> [UInt64?] {
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0", path])
        let size = probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        guard size.count == 2 else { return [] }
        let decoded = try run("ffmpeg", ["-v", "error", "-i", path, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        let frameBytes = size[0] * size[1]
        let frames = Array(decoded.stdout)
        return (0..<(frames.count / frameBytes)).map { i in
            readPatternCounter(Array(frames[(i * frameBytes)..<((i + 1) * frameBytes)]), width: size[0], height: size[1])
        }
    }

    /// A live test-pattern recording holds `frames` pictures whose burned-in numbers rise, none twice,
    /// the missing ones no more than the `dropped=` camrec's summary for OUTPUT reports: the pattern is
    /// paced like a camera, so beside a busy process the encoder (libx265 above all) can fall behind and
    /// frames are dropped and counted rather than delivered late.
    static func assertEveryFrameAccounted(_ counters: [UInt64?], frames: Int, output: String, stderr: String,
                                          file: StaticString = #filePath, line: UInt = #line) {
        let summary = stderr.split(separator: "\n").first { $0.hasPrefix("camrec: finished output=\(output) ") }
        assertEveryFrameAccounted(counters, frames: frames, summary: summary.map(String.init) ?? stderr, file: file, line: line)
    }

    /// The same, given the summary line itself.
    static func assertEveryFrameAccounted(_ counters: [UInt64?], frames: Int, summary: String,
                                          file: StaticString = #filePath, line: UInt = #line) {
        guard let dropped = summary.split(separator: " ").first(where: { $0.hasPrefix("dropped=") }).flatMap({ Int($0.dropFirst(8)) }) else {
            return XCTFail("no summary line with dropped=: \(summary)", file: file, line: line)
        }
        let numbers = counters.compactMap { $0 }
        XCTAssertEqual(numbers.count, frames, "every one of the \(frames) pictures has its number: \(counters)", file: file, line: line)
        XCTAssertEqual(numbers, numbers.sorted(), "in order", file: file, line: line)
        XCTAssertEqual(Set(numbers).count, numbers.count, "none twice", file: file, line: line)
        XCTAssertLessThan(numbers.last ?? .max, UInt64(frames + dropped),
                          "\(frames) of the frames 0..\(frames + dropped - 1), the missing ones reported dropped (\(dropped)): \(numbers)",
                          file: file, line: line)
    }

    /// The frame number of one decoded 8-bit luma picture, written from docs/RECORDING.md's description of
    /// --test-pattern ("top left, 32 bits as black/white 16x16 blocks between two white markers",
    /// most significant bit first, from x=16, y=16, as Tests/tools/pattern-counters.py reads it) and
    /// sharing no code with camrec. Each block is judged by the mean of its inner 8x8 samples: above
    /// 160 white, below 96 black, anything else (or a black marker) nil.
    static func readPatternCounter(_ luma: [UInt8], width: Int, height: Int) -> UInt64? {
        let block = 16, bits = 32, x0 = 16, y0 = 16
        guard width >= x0 + (bits + 2) * block, height >= y0 + block, luma.count >= width * height else { return nil }
        func level(_ index: Int) -> Bool? {
            var sum = 0
            for y in (y0 + 4)..<(y0 + 12) {
                for x in (x0 + index * block + 4)..<(x0 + index * block + 12) { sum += Int(luma[y * width + x]) }
            }
            let mean = sum / 64
            return mean > 160 ? true : mean < 96 ? false : nil
        }
        guard level(0) == true, level(bits + 1) == true else { return nil }
        var value: UInt64 = 0
        for bit in 1...bits {
            guard let white = level(bit) else { return nil }
            value = value << 1 | (white ? 1 : 0)
        }
        return value
    }

    /// Errors the decoder reports while decoding the whole file.
    static func decodeErrors(_ path: String) throws -> String {
        let r = try run("ffmpeg", ["-v", "error", "-i", path, "-f", "null", "-"])
        return r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

final class DataBox: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}

/// An end-to-end test that needs ffmpeg and gets a scratch directory `dir` of its own, removed afterwards.
class ScratchDirectoryTestCase: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        try requireFFmpeg()
        dir = try makeScratchDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// A scratch directory per test, removed afterwards.
func makeScratchDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "camrec-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func requireFFmpeg() throws {
    try XCTSkipIf(Tools.which("ffprobe") == nil || Tools.which("ffmpeg") == nil,
                  "ffmpeg/ffprobe missing: run scripts/setup.sh --test")
}
