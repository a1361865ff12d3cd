import CFFmpeg
@testable import Capture
import Frames
import XCTest

/// MJPEGDecoder (libjpeg-turbo) with real JPEGs from libavcodec's mjpeg encoder, fed the way V4L2 hands
/// them over: `bytesused` bytes at the start of a larger mapped buffer whose tail holds
/// stale bytes.
final class MJPEGDecoderTests: XCTestCase {
    private let width = 640, height = 360

    /// A buffer shaped like an mmap'd V4L2 buffer: the JPEG, then stale bytes up to `sizeimage`.
    private func withMappedBuffer<R>(_ jpeg: [UInt8], sizeImage: Int? = nil,
                                     _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let length = sizeImage ?? width * height * 2
        let mapped = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 4096)
        defer { mapped.deallocate() }
        // Stale bytes that look like JPEG markers, to catch a decoder reading past bytesused.
        for i in 0..<length { mapped[i] = i % 2 == 0 ? 0xFF : 0xD9 }
        mapped.copyBytes(from: jpeg)
        return try body(UnsafeRawBufferPointer(rebasing: mapped[0..<jpeg.count]))
    }

    private func decode(_ jpeg: [UInt8], format: PixelFormat, decoder: MJPEGDecoder? = nil,
                        sizeImage: Int? = nil) throws -> PixelBuffer {
        let decoder = try decoder ?? MJPEGDecoder(frameSize: FrameSize(width: width, height: height))
        let pool = PixelBufferPool(format: format, width: width, height: height, capacity: 1)
        let out = pool.tryTake()!
        _ = try withMappedBuffer(jpeg, sizeImage: sizeImage) { try decoder.decode($0, into: out) }
        return out
    }

    /// PSNR against the source picture, per plane. Measured (libavcodec's mjpeg encoder at its default
    /// quality, this 640x360 pattern; the same on every run, it is arithmetic): luma 50.34 dB for every JPEG
    /// and pool format; Cb/Cr 58.05/58.59 dB from 4:2:2 and 4:2:0, 62.93/60.79 dB from 4:4:4. Bounds 2 to
    /// 3 dB below, for another libavcodec's encoder. Seen: a full → limited luma table two levels high
    /// gives 42.84 dB (passed the old bound of 40, fails 48); one level high stays above 48 and is caught
    /// by testFullRangeBecomesLimitedRange's 16...235 instead.
    static let lumaPSNRBound = 48.0    // measured 50.34
    static let chromaPSNRBound = 55.0  // measured 58.05 (Cb, 4:2:x), the lowest chroma plane

    private func assertClose(_ decoded: PixelBuffer, to reference: PixelBuffer,
                             _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let picture = decoded.format == .nv12 ? JPEGTestPictures.asI420(decoded) : decoded
        for plane in 0..<3 {
            let psnr = JPEGTestPictures.psnr(picture, reference, plane: plane) ?? .infinity
            let minimum = plane == 0 ? Self.lumaPSNRBound : Self.chromaPSNRBound
            XCTAssertGreaterThan(psnr, minimum, "\(what): plane \(plane) PSNR \(psnr) dB (bound \(minimum))", file: file, line: line)
        }
    }

    func testJPEG422And420DecodeIntoPoolBuffersCloseToTheSource() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        for jpegFormat in [AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ444P] {
            let jpeg = try JPEGTestPictures.jpeg(of: reference, pixelFormat: jpegFormat)
            for poolFormat in [PixelFormat.i420, .nv12] {
                let out = try decode(jpeg, format: poolFormat)
                assertClose(out, to: reference, "\(String(cString: av_get_pix_fmt_name(jpegFormat))) → \(poolFormat)")
            }
        }
    }

    /// Without the full → limited range step luma would come out stretched (black at 0, white
    /// at 255): far below this.
    func testFullRangeBecomesLimitedRange() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let jpeg = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ420P)
        let out = try decode(jpeg, format: .i420)
        let luma = out.planes[0]
        var low = 255, high = 0
        for row in 0..<height {
            for x in 0..<width {
                low = min(low, Int(luma.base[row * luma.stride + x]))
                high = max(high, Int(luma.base[row * luma.stride + x]))
            }
        }
        XCTAssertGreaterThanOrEqual(low, 16)
        XCTAssertLessThanOrEqual(high, 235)
        let lumaPSNR = JPEGTestPictures.psnr(out, reference, plane: 0) ?? .infinity
        XCTAssertGreaterThan(lumaPSNR, Self.lumaPSNRBound, "luma PSNR \(lumaPSNR) dB")
    }

    func testOneDecoderServesManyFramesAndRecoversAfterBadOnes() throws {
        let decoder = try MJPEGDecoder(frameSize: FrameSize(width: width, height: height))
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let good = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ422P)
        var damaged = good
        // Wreck the entropy-coded data but keep the markers at both ends.
        for i in stride(from: good.count / 3, to: good.count - 16, by: 7) { damaged[i] = 0xFF }
        for round in 0..<3 {
            assertClose(try decode(good, format: .i420, decoder: decoder), to: reference, "round \(round)")
            // Damage the decoder does not notice may give a damaged picture; it must never crash.
            _ = try? decode(damaged, format: .i420, decoder: decoder)
            XCTAssertThrowsError(try decode(Array(good.prefix(good.count / 2)), format: .i420, decoder: decoder))
        }
        // Exactly bytesused long, no room after it: the decoder's own padded copy is what it reads.
        assertClose(try decode(good, format: .nv12, decoder: decoder, sizeImage: good.count), to: reference,
                    "unpadded")
    }

    func testCorruptFramesThrowTheirReason() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let good = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ420P)
        func reason(_ bytes: [UInt8]) -> MJPEGFrameError? {
            do {
                _ = try decode(bytes, format: .i420)
                return nil
            } catch let error as MJPEGFrameError {
                return error
            } catch {
                XCTFail("\(error)")
                return nil
            }
        }
        XCTAssertEqual(reason([]), .empty)
        var random = SystemRandomNumberGenerator()
        let garbage = (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        XCTAssertEqual(reason([0x12, 0x34] + garbage), .notJPEG)
        for cut in [4, 100, good.count / 4, good.count / 2, good.count - 3] {
            XCTAssertEqual(reason(Array(good.prefix(cut))), .truncated, "cut at \(cut) of \(good.count)")
        }
        // Markers at both ends, nothing decodable between.
        guard case .undecodable = reason([0xFF, 0xD8] + garbage.map { $0 == 0xFF ? 0 : $0 } + [0xFF, 0xD9]) else {
            return XCTFail("garbage between SOI and EOI was not refused")
        }
        // Padding after the end-of-image marker, as some cameras send, is fine.
        XCTAssertNil(reason(good + [UInt8](repeating: 0, count: 300)))
        let small = try JPEGTestPictures.jpeg(of: try JPEGTestPictures.pattern(width: 320, height: 180),
                                              pixelFormat: AV_PIX_FMT_YUVJ420P)
        XCTAssertEqual(reason(small), .wrongSize(width: 320, height: 180, expected: FrameSize(width: width, height: height)))
    }

    /// UVC cameras leave the Huffman tables out of their frames and use the standard ones (the "AVI1"
    /// MJPEG convention); libavcodec and libjpeg-turbo (since 1.5) both fall back on them. Without that
    /// such a frame is undecodable ("Huffman table 0x00 was not defined").
    func testAFrameWithoutHuffmanTablesDecodesWithTheStandardOnes() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let full = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ422P, standardTables: true)
        let bare = JPEGTestPictures.segments(of: full, without: 0xC4)
        XCTAssertLessThan(bare.count, full.count - 400, "the four standard tables (about 420 bytes) were taken out")
        assertClose(try decode(bare, format: .nv12), to: reference, "no DHT")
    }

    /// A frame cut short inside its scan but ended with an end-of-image marker (so the framing check passes):
    /// libjpeg warns "premature end of data segment" and the frame is damaged, not a picture grey from the
    /// cut down. Decoding stops there.
    func testAFrameCutInsideItsScanIsDamaged() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let good = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ420P)
        let decoder = try MJPEGDecoder(frameSize: FrameSize(width: width, height: height))
        for cut in [good.count / 3, good.count / 2, good.count - 200] {
            XCTAssertThrowsError(try decode(Array(good.prefix(cut)) + [0xFF, 0xD9], format: .i420, decoder: decoder),
                                 "cut at \(cut) of \(good.count)") { XCTAssertEqual($0 as? MJPEGFrameError, .damaged) }
        }
        assertClose(try decode(good, format: .i420, decoder: decoder), to: reference, "after the damaged ones")
    }

    /// A comment "CS=ITU601" says the samples are limited range already (libavcodec's mjpeg reads it so):
    /// luma passes as it is, where without it each sample is mapped into 16-235.
    func testAnITU601CommentMeansLimitedRange() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let jpeg = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ420P)
        let comment = Array("CS=ITU601".utf8) + [0]
        let marked = [0xFF, 0xD8, 0xFF, 0xFE, 0, UInt8(comment.count + 2)] + comment + jpeg.dropFirst(2)
        let full = try decode(jpeg, format: .i420), limited = try decode(marked, format: .i420)
        let a = full.planes[0], b = limited.planes[0]
        var mismatches = 0, above235 = 0
        for row in 0..<height {
            for x in 0..<width {
                let passed = b.base[row * b.stride + x]
                if FrameConverter.limitedLuma(passed) != a.base[row * a.stride + x] { mismatches += 1 }
                if passed > 235 { above235 += 1 }
            }
        }
        XCTAssertEqual(mismatches, 0, "each luma sample with the comment, mapped, is the one without it")
        XCTAssertGreaterThan(above235, 0, "the white bars pass as 255, unmapped")
    }

    func testMJPEGAndJPEGAreRecordable() {
        XCTAssertTrue(V4L2PixelFormat.mjpeg.isRecordable)
        XCTAssertTrue(V4L2PixelFormat.jpeg.isRecordable)
        XCTAssertTrue(V4L2PixelFormat.yuyv.isRecordable)
        XCTAssertFalse(V4L2PixelFormat.h264.isRecordable)
    }
}

/// The one-pass conversion of decoded pictures, against values worked out by hand.
final class PlanarYCbCrConversionTests: XCTestCase {
    /// The pass computes full → limited range by arithmetic (so it vectorizes); the tables are the definition.
    func testRangeArithmeticEqualsTheTables() {
        for value in 0...255 {
            XCTAssertEqual(FrameConverter.limitedLuma(UInt8(value)), FrameConverter.fullToLimitedLuma[value], "luma \(value)")
            XCTAssertEqual(FrameConverter.limitedChroma(UInt8(value)), FrameConverter.fullToLimitedChroma[value], "chroma \(value)")
        }
    }

    private func convert(width: Int, height: Int, planes: [[UInt8]], strides: [Int], shift: (Int, Int),
                         fullRange: Bool = true, into format: PixelFormat = .i420) -> PixelBuffer {
        let pool = PixelBufferPool(format: format, width: width, height: height, capacity: 1)
        let out = pool.tryTake()!
        let copies = planes.map { bytes -> UnsafeMutableRawBufferPointer in
            let p = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
            p.copyBytes(from: bytes)
            return p
        }
        defer { copies.forEach { $0.deallocate() } }
        FrameConverter.convert(FrameConverter.PlanarYCbCrImage(
            width: width, height: height, planes: copies.map { UnsafeRawPointer($0.baseAddress!) }, strides: strides,
            chromaShiftX: shift.0, chromaShiftY: shift.1, fullRange: fullRange), into: out)
        return out
    }

    private func row(_ b: PixelBuffer, _ plane: Int, _ y: Int) -> [UInt8] {
        let p = b.planes[plane]
        return Array(UnsafeBufferPointer(start: p.base + y * p.stride, count: p.width))
    }

    func testFullRangeEndpointsMapToVideoRange() {
        let out = convert(width: 2, height: 2, planes: [[0, 255, 128, 64], [0], [255]], strides: [2, 1, 1], shift: (1, 1))
        // 0→16, 255→235, 128→16+110=126 (128·219/255=109.9), 64→16+55=71 (54.96)
        XCTAssertEqual(row(out, 0, 0), [16, 235])
        XCTAssertEqual(row(out, 0, 1), [126, 71])
        XCTAssertEqual(row(out, 1, 0), [16])
        XCTAssertEqual(row(out, 2, 0), [240])
        let limited = convert(width: 2, height: 2, planes: [[0, 255, 128, 64], [0], [255]], strides: [2, 1, 1],
                              shift: (1, 1), fullRange: false)
        XCTAssertEqual(row(limited, 0, 0), [0, 255], "limited-range pictures pass unchanged")
    }

    func testSubsamplingsAverageTheChromaUnderEach2x2Block() {
        let y = [UInt8](repeating: 100, count: 16)
        // 4:4:4, 4x2: each 2x2 block's four samples are averaged (rounding half up).
        let s444 = convert(width: 4, height: 2, planes: [y, [10, 20, 30, 40, 11, 21, 31, 41], [1, 2, 3, 4, 5, 6, 7, 8]],
                           strides: [4, 4, 4], shift: (0, 0), fullRange: false)
        XCTAssertEqual(row(s444, 1, 0), [16, 36])   // (10+20+11+21+2)/4=16, (30+40+31+41+2)/4=36
        XCTAssertEqual(row(s444, 2, 0), [4, 6])     // (1+2+5+6+2)/4=4, (3+4+7+8+2)/4=6
        // 4:2:2, 4x2, NV12: rows averaged.
        let s422 = convert(width: 4, height: 2, planes: [y, [10, 20, 13, 23], [100, 200, 101, 201]],
                           strides: [4, 2, 2], shift: (1, 0), fullRange: false, into: .nv12)
        XCTAssertEqual(row(s422, 1, 0), [12, 101, 22, 201])
        // 4:4:0 (full width, half height): columns averaged.
        let s440 = convert(width: 4, height: 2, planes: [y, [10, 20, 30, 41], [0, 0, 0, 0]],
                           strides: [4, 4, 4], shift: (0, 1), fullRange: false)
        XCTAssertEqual(row(s440, 1, 0), [15, 36])
        // 4:1:1: one chroma sample per four pixels, shared by both destination columns.
        let s411 = convert(width: 4, height: 2, planes: [y, [50, 60], [70, 80]], strides: [4, 1, 1], shift: (2, 0),
                           fullRange: false)
        XCTAssertEqual(row(s411, 1, 0), [55, 55])
        XCTAssertEqual(row(s411, 2, 0), [75, 75])
    }

    /// A decoder's strips (8 or 16 rows, the last one shorter) converted at their rows give the same
    /// bytes as the whole picture at once, for each subsampling and both pool formats.
    func testStripsGiveTheSameBytesAsTheWholePicture() {
        let width = 38, height = 30
        for (sx, sy) in [(1, 0), (1, 1), (0, 0), (2, 0)] {
            let cw = (width + (1 << sx) - 1) >> sx, ch = (height + (1 << sy) - 1) >> sy
            let y = (0..<(width * height)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let cb = (0..<(cw * ch)).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 7) }
            let cr = (0..<(cw * ch)).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 200) }
            for format in [PixelFormat.i420, .nv12] {
                let whole = convert(width: width, height: height, planes: [y, cb, cr], strides: [width, cw, cw],
                                    shift: (sx, sy), into: format)
                let pool = PixelBufferPool(format: format, width: width, height: height, capacity: 1)
                let strips = pool.tryTake()!
                let stripRows = 8 << sy
                for first in stride(from: 0, to: height, by: stripRows) {
                    let rows = min(stripRows, height - first)
                    y.withUnsafeBytes { yb in cb.withUnsafeBytes { cbb in cr.withUnsafeBytes { crb in
                        FrameConverter.convert(FrameConverter.PlanarYCbCrImage(
                            width: width, height: rows,
                            planes: [yb.baseAddress! + first * width, cbb.baseAddress! + (first >> sy) * cw,
                                     crb.baseAddress! + (first >> sy) * cw],
                            strides: [width, cw, cw], chromaShiftX: sx, chromaShiftY: sy, fullRange: true),
                            into: strips, atRow: first)
                    } } }
                }
                for plane in 0..<whole.planes.count {
                    for row in 0..<whole.planes[plane].height {
                        XCTAssertEqual(self.row(strips, plane, row), self.row(whole, plane, row),
                                       "\(sx),\(sy) \(format): plane \(plane) row \(row)")
                    }
                }
            }
        }
    }

    func testOddSizesAndGrey() {
        // 3x3 4:2:0 → chroma 2x2; the last column and row take their only sample.
        let out = convert(width: 3, height: 3, planes: [[UInt8](repeating: 50, count: 9), [10, 20, 30, 40], [1, 2, 3, 4]],
                          strides: [3, 2, 2], shift: (1, 1), fullRange: false)
        XCTAssertEqual(row(out, 1, 0), [10, 20])
        XCTAssertEqual(row(out, 1, 1), [30, 40])
        let grey = convert(width: 2, height: 2, planes: [[0, 255, 255, 0]], strides: [2], shift: (0, 0), into: .nv12)
        XCTAssertEqual(row(grey, 0, 0), [16, 235])
        XCTAssertEqual(row(grey, 1, 0), [128, 128])
    }
}
