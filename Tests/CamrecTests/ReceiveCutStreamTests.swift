import Foundation
import Glibc
import XCTest

/// `camrec receive` at the end of a cut stream: a sender that stops at every byte of the last two
/// access units (a P picture, then an IDR with its SPS and PPS). One receiver takes one connection
/// per cut; what it writes must be whole access units of the sender's stream, byte for byte.
///
/// The truth is the sender's own file, split into access units here without camrec's code: in a bare
/// stream one begins at each SPS and each non-IDR slice (one slice per picture); in a stream with
/// timing notes, at each note. For every cut the receiver's summary line says how many frames that
/// connection wrote, and the file it writes must be exactly the concatenation, over the cuts, of that
/// many whole access units.
final class ReceiveCutStreamTests: ScratchDirectoryTestCase {
    private enum Ending { case orderly, reset }

    /// The stream with timing notes (`--timing-sei`), ended in an orderly way: each note carries its
    /// access unit's size, so exactly the access units that arrived whole are written.
    func testWithTimingNotesExactlyTheWholeAccessUnitsAreWrittenAtEveryCut() throws {
        let timed = try record(timingSEI: true)
        let bare = withoutTimingNotes(timed)
        let timedStarts = Self.noteOffsets(timed)
        let result = try cutEveryByte(of: timed, ending: .orderly)
        var expected = Data()
        for (cut, frames) in result.framesPerCut {
            let whole = Self.wholeUnits(starts: timedStarts, total: timed.count, cut: cut)
            XCTAssertEqual(frames, whole, "cut at byte \(cut): \(whole) access units arrived whole")
            expected += bare.prefix(Self.end(ofUnits: frames, starts: Self.bareOffsets(bare), total: bare.count))
        }
        XCTAssertEqual(result.written, expected, "the file is the whole access units of every cut, nothing else")
    }

    /// A bare stream whose sender's connection breaks (a reset, as camrec's own sender closes a
    /// connection it gives up inside an access unit): the last access unit is never written, so at
    /// most the one that had just arrived whole is lost, and no cut one is ever written. An access
    /// unit is known whole once the next one's start code and NAL header (5 bytes) have arrived, so
    /// it is lost only for cuts within those 5 bytes, and at the stream's end, which nothing follows.
    func testBareStreamCutByAResetWritesOnlyWholeAccessUnits() throws {
        let bare = try record(timingSEI: false)
        let starts = Self.bareOffsets(bare)
        let result = try cutEveryByte(of: bare, ending: .reset)
        var expected = Data()
        var lostWhole = 0
        for (cut, frames) in result.framesPerCut {
            let whole = Self.wholeUnits(starts: starts, total: bare.count, cut: cut)
            XCTAssertTrue(frames == whole || frames == whole - 1, "cut at byte \(cut): \(frames) written, \(whole) whole")
            if frames < whole {
                lostWhole += 1
                let next = whole < starts.count ? starts[whole] : bare.count
                XCTAssertLessThan(cut - next, 5, "cut at byte \(cut), \(cut - next) bytes into the next access unit: "
                                  + "its start code and header said the one before had arrived whole, and it was lost")
            }
            expected += bare.prefix(Self.end(ofUnits: frames, starts: starts, total: bare.count))
        }
        XCTAssertEqual(result.written, expected, "the file is whole access units only")
        // The two access units cut here each begin 5 such cuts, and the stream's end is one more.
        XCTAssertEqual(lostWhole, 11, "cuts that lost the access unit that had just arrived whole, of \(result.framesPerCut.count)")
    }

    /// A bare stream ended in an orderly way inside an access unit (a sender other than camrec that
    /// stops mid-picture): nothing says how long the last access unit was, so receive keeps it only if
    /// it decodes. Never an access unit without its picture; what is written is the sender's bytes.
    func testBareStreamEndedMidAccessUnitNeverWritesAPictureWithoutItsSlice() throws {
        let bare = try record(timingSEI: false)
        let starts = Self.bareOffsets(bare)
        let result = try cutEveryByte(of: bare, ending: .orderly)
        var expected = Data()
        var cutKept = 0
        for (cut, frames) in result.framesPerCut {
            let whole = Self.wholeUnits(starts: starts, total: bare.count, cut: cut)
            XCTAssertTrue(frames == whole || frames == whole + 1, "cut at byte \(cut): \(frames) written, \(whole) whole")
            if frames > whole {
                // The last one was cut inside its slice (a cut before the slice has no picture to count).
                cutKept += 1
                let sliceStart = Self.startCodes(bare).first { $0 >= starts[whole] && [1, 5].contains(bare[$0 + 4] & 0x1F) } ?? starts[whole]
                XCTAssertGreaterThan(cut, sliceStart + 5, "cut at byte \(cut): a picture is never written without its slice")
                // Zero bytes at the very end are trailing_zero_8bits (or a start code's head), no part of the slice.
                var kept = bare.prefix(cut)
                while kept.last == 0 { kept.removeLast() }
                expected += kept
            } else {
                expected += bare.prefix(Self.end(ofUnits: frames, starts: starts, total: bare.count))
            }
        }
        XCTAssertEqual(result.written, expected)
        print("ReceiveCutStreamTests: orderly end of a bare stream: \(cutKept) of \(result.framesPerCut.count) cuts inside a slice decoded without an error and were kept")
    }

    // MARK: - Helpers

    /// 4 frames at 160x120, an IDR every 3: IDR P P IDR.
    private func record(timingSEI: Bool) throws -> Data {
        let path = "\(dir)/sent-\(timingSEI).h264"
        let r = try Tools.camrec(["--test-pattern", "--size", "160x120", "--frames", "4", "--keyframe-interval", "3", path]
                                 + (timingSEI ? ["--timing-sei"] : []))
        XCTAssertEqual(r.status, 0, r.stderr)
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// Sends `stream` cut at every byte of its last two access units to one `camrec receive --listen`,
    /// one connection per cut, each waited for in the receiver's log. Returns the frames each
    /// connection wrote and the file.
    private func cutEveryByte(of stream: Data, ending: Ending) throws -> (framesPerCut: [(Int, Int)], written: Data) {
        let starts = Self.noteOffsets(stream).isEmpty ? Self.bareOffsets(stream) : Self.noteOffsets(stream)
        XCTAssertEqual(starts.count, 4)
        // Below the kernel's ephemeral range (32768-60999), where the thousands of connections made here
        // hold their ports for a while.
        let port = Int.random(in: 12_000..<20_000)
        let out = "\(dir)/received.h264"
        let (receiver, errors) = try Tools.launch(Tools.camrec, ["receive", "--listen", "127.0.0.1:\(port)", out])
        defer { if receiver.isRunning { receiver.terminate() } }
        let log = LineCollector(errors.fileHandleForReading)
        try log.wait(for: "waiting for a sender", count: 1)
        var framesPerCut: [(Int, Int)] = []
        for cut in starts[2]...stream.count {
            try send(stream.prefix(cut), to: port, ending: ending)
            let line = try log.wait(for: " frames", count: framesPerCut.count + 1, containing: "after ")
            let frames = Int(line.split(separator: " ").dropLast().last ?? "") ?? -1
            framesPerCut.append((cut, frames))
        }
        kill(receiver.processIdentifier, SIGINT)
        receiver.waitUntilExit()
        XCTAssertEqual(receiver.terminationStatus, 0, log.text)
        return (framesPerCut, (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data())
    }

    private func send(_ bytes: Data, to port: Int, ending: Ending) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(connected, 0, "connect: \(String(cString: strerror(errno)))")
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if ending == .reset {
            var noLinger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
        } else {
            shutdown(fd, Int32(SHUT_WR))
        }
        close(fd)
    }

    /// Access units that lie whole within the first `cut` bytes.
    private static func wholeUnits(starts: [Int], total: Int, cut: Int) -> Int {
        (0..<starts.count).filter { (($0 + 1 < starts.count) ? starts[$0 + 1] : total) <= cut }.count
    }

    private static func end(ofUnits count: Int, starts: [Int], total: Int) -> Int {
        count <= 0 ? 0 : (count < starts.count ? starts[count] : total)
    }

    /// Offsets of the 4-byte start codes of every SPS and non-IDR slice: in a bare stream with one slice
    /// per picture, where each access unit begins.
    private static func bareOffsets(_ data: Data) -> [Int] {
        startCodes(data).filter { [7, 1].contains(data[$0 + 4] & 0x1F) }
    }

    /// Offsets of camrec's timing notes (SEI, user data unregistered, its UUID c4a3…).
    private static func noteOffsets(_ data: Data) -> [Int] {
        startCodes(data).filter { $0 + 8 < data.count && data[$0 + 4] == 6 && data[$0 + 5] == 5 && data[$0 + 7] == 0xC4 && data[$0 + 8] == 0xA3 }
    }

    private static func startCodes(_ data: Data) -> [Int] {
        let bytes = [UInt8](data)
        return (0..<max(0, bytes.count - 4)).filter { bytes[$0] == 0 && bytes[$0 + 1] == 0 && bytes[$0 + 2] == 0 && bytes[$0 + 3] == 1 }
    }
}

private struct WaitTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Collects a process's stderr lines on a thread of its own, for waits on log lines.
private final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var partial = ""

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                lock.lock()
                partial += String(decoding: data, as: UTF8.self)
                while let newline = partial.firstIndex(of: "\n") {
                    lines.append(String(partial[..<newline]))
                    partial = String(partial[partial.index(after: newline)...])
                }
                lock.unlock()
            }
        }
    }

    var text: String { lock.lock(); defer { lock.unlock() }; return lines.joined(separator: "\n") }

    /// Waits (at most 20 s) until `count` lines end with `suffix` (and contain `containing`); returns the last.
    /// Lines already looked at for the same question are not looked at again (thousands of cuts).
    @discardableResult
    func wait(for suffix: String, count: Int, containing: String = "") throws -> String {
        let question = [suffix, containing]
        for _ in 0..<20_000 {
            lock.lock()
            if question != asked { asked = question; scanned = 0; matching = [] }
            while scanned < lines.count {
                let line = lines[scanned]
                scanned += 1
                if (line.hasSuffix(suffix) || line.contains(suffix)) && (containing.isEmpty || line.contains(containing)) {
                    matching.append(line)
                }
            }
            let found = matching.count >= count ? matching[count - 1] : nil
            lock.unlock()
            if let found { return found }
            usleep(1000)
        }
        throw WaitTimeout(description: "no line \(count) with \(suffix) within 20 s: \(text.suffix(500))")
    }
    private var asked: [String] = []
    private var scanned = 0
    private var matching: [String] = []
}
