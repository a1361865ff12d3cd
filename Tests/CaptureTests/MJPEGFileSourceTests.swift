import CFFmpeg
@testable import Capture
import Frames
import Glibc
import SystemPackage
import Threading
import XCTest

/// `--input-format mjpeg` reads concatenated JPEGs from a file nobody vouches for: damaged bytes cost
/// the pictures they hit, never the ones after them, and never a buffer beyond its bound.
final class MJPEGFileSourceTests: XCTestCase {
    private func jpeg() throws -> [UInt8] {
        try JPEGTestPictures.jpeg(of: JPEGTestPictures.pattern(width: 64, height: 48), pixelFormat: AV_PIX_FMT_YUVJ420P)
    }

    func testScanFindsWholeCutAndDamagedPictures() throws {
        let picture = try jpeg()
        let garbage: [UInt8] = [0x00, 0x12, 0xFF, 0x00]
        (garbage + picture).withUnsafeBytes {
            XCTAssertEqual(MJPEGFileSource.scan($0), .jpeg(offset: 4, length: picture.count))
        }
        Array(picture.dropLast(2)).withUnsafeBytes { XCTAssertEqual(MJPEGFileSource.scan($0), .needMore(offset: 0)) }
        ([0xFF, 0xD8, 0x01, 0x02, 0x03, 0x04] as [UInt8]).withUnsafeBytes { XCTAssertEqual(MJPEGFileSource.scan($0), .damaged(offset: 0)) }
        ([0x00, 0x01, 0x02] as [UInt8]).withUnsafeBytes { XCTAssertEqual(MJPEGFileSource.scan($0), .needMore(offset: 2)) }
    }

    /// A picture, random bytes, a false start-of-image, 100 MB without one, then a picture: both pictures
    /// come out, the damage is counted, and the buffer stays within its bound.
    func testDamagedBytesCostOnlyThemselvesAndTheBufferStaysBounded() throws {
        let picture = try jpeg()
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mjpeg-\(getpid()).mjpg").path
        defer { unlink(path) }
        let file = try FileDescriptor.open(FilePath(path), .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite)
        _ = try file.writeAll(picture + noise + [0xFF, 0xD8, 0x01, 0x01])
        let plain = [UInt8](repeating: 0x01, count: 1 << 20)
        for _ in 0..<100 { _ = try file.writeAll(plain) }
        _ = try file.writeAll(picture)
        try file.close()

        let input = try FileDescriptor.open(FilePath(path), .readOnly)
        defer { try? input.close() }
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 64)
        defer { buffer.deallocate() }
        var start = 0, pending = 0, atEnd = false, damaged = 0, found: [[UInt8]] = [], largest = 0
        while let range = try MJPEGFileSource.nextJPEG(in: &buffer, start: &start, pending: &pending, atEnd: &atEnd,
                                                        descriptor: input, path: path, damaged: { damaged += 1 }) {
            found.append(Array(buffer[range]))
            largest = max(largest, buffer.count)
        }
        largest = max(largest, buffer.count)
        XCTAssertEqual(found.first, picture)
        XCTAssertEqual(found.last, picture, "the picture after the damage was lost")
        XCTAssertGreaterThanOrEqual(damaged, 1, "the false start-of-image was not counted")
        XCTAssertLessThanOrEqual(largest, 1 << 20, "100 MB without a picture grew the buffer to \(largest) bytes")
    }

    /// A capture thread keeps the two pictures it took, so its third waits for a pool buffer; `stop()` from
    /// another thread (which reads `statistics` meanwhile) ends that wait. The two it kept are the file's
    /// first two JPEGs in order: each within the decoder's PSNR bounds of the pattern frame it was made of.
    func testStopFromAnotherThreadEndsACaptureWaitingForABuffer() throws {
        let (width, height) = (640, 360)
        let references = try [3, 13, 23].map { try JPEGTestPictures.pattern(width: width, height: height, frame: $0) }
        let jpegs = try references.map { try JPEGTestPictures.jpeg(of: $0, pixelFormat: AV_PIX_FMT_YUVJ420P) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mjpeg-threads-\(getpid()).mjpg").path
        defer { unlink(path) }
        let file = try FileDescriptor.open(FilePath(path), .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite)
        for jpeg in jpegs { _ = try file.writeAll(jpeg) }
        try file.close()

        let source = try MJPEGFileSource(path: path, size: nil, fps: 30)
        let pool = PixelBufferPool(format: .i420, width: width, height: height, capacity: 2)
        for (index, buffer) in try framesKeptUntilStoppedWhileWaitingForABuffer(source, pool: pool).enumerated() {
            XCTAssertEqual(buffer.sequence, UInt64(index))
            let psnr = JPEGTestPictures.psnr(buffer, references[index], plane: 0) ?? .infinity
            XCTAssertGreaterThan(psnr, MJPEGDecoderTests.lumaPSNRBound, "picture \(index): luma PSNR \(psnr) dB against its pattern frame")
            buffer.recycle()
        }
    }
}
