import CFFmpeg
@testable import Capture
import Frames
import XCTest

/// Real JPEGs for the MJPEG tests: the test pattern, made full range, encoded with
/// libavcodec's own mjpeg encoder, and a PSNR to compare pictures with.
enum JPEGTestPictures {
    /// One test-pattern frame as limited-range I420 (what camrec's other sources deliver):
    /// the reference the decoded JPEGs are compared with.
    static func pattern(width: Int, height: Int, frame: Int = 3) throws -> PixelBuffer {
        let source = TestPatternSource(size: FrameSize(width: width, height: height), fps: 30, realTime: false)
        let pool = PixelBufferPool(format: .i420, width: width, height: height, capacity: 2)
        try source.start(pool: pool)
        var picture: PixelBuffer?
        for _ in 0...frame {
            picture?.recycle()
            picture = try XCTUnwrap(source.nextFrame())
        }
        source.stop()
        return picture!
    }

    /// `reference` (limited-range I420) as a full-range JPEG picture with the given chroma
    /// subsampling, encoded by libavcodec's mjpeg encoder at quantiser `q` (2 is near the best),
    /// with Huffman tables made for the picture or, `standardTables`, the standard ones (JPEG's Annex K,
    /// which UVC cameras use and then leave out of their frames).
    static func jpeg(of reference: PixelBuffer, pixelFormat: AVPixelFormat, q: Int32 = 2,
                     standardTables: Bool = false) throws -> [UInt8] {
        precondition(reference.format == .i420)
        let (sx, sy): (Int, Int)
        switch pixelFormat {
        case AV_PIX_FMT_YUVJ420P: (sx, sy) = (1, 1)
        case AV_PIX_FMT_YUVJ422P: (sx, sy) = (1, 0)
        case AV_PIX_FMT_YUVJ444P: (sx, sy) = (0, 0)
        default: preconditionFailure("the mjpeg encoder takes yuvj420p, yuvj422p or yuvj444p")
        }
        let codec = try XCTUnwrap(avcodec_find_encoder(AV_CODEC_ID_MJPEG), "this FFmpeg has no mjpeg encoder")
        var ctx = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&ctx) }
        let c = try XCTUnwrap(ctx)
        let w = reference.width, h = reference.height
        c.pointee.width = Int32(w)
        c.pointee.height = Int32(h)
        c.pointee.pix_fmt = pixelFormat
        c.pointee.time_base = AVRational(num: 1, den: 30)
        c.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
        c.pointee.global_quality = q * Int32(FF_QP2LAMBDA)
        if standardTables { XCTAssertEqual(av_opt_set(c.pointee.priv_data, "huffman", "default", 0), 0) }
        XCTAssertGreaterThanOrEqual(avcodec_open2(c, codec, nil), 0)

        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        let f = try XCTUnwrap(frame)
        f.pointee.width = Int32(w)
        f.pointee.height = Int32(h)
        f.pointee.format = pixelFormat.rawValue
        f.pointee.quality = c.pointee.global_quality
        XCTAssertGreaterThanOrEqual(av_frame_get_buffer(f, 0), 0)
        let data = withUnsafeBytes(of: f.pointee.data) { Array($0.bindMemory(to: UnsafeMutablePointer<UInt8>?.self).prefix(3)) }
        let lines = withUnsafeBytes(of: f.pointee.linesize) { Array($0.bindMemory(to: Int32.self).prefix(3)) }
        // Limited → full range; chroma taken from the 4:2:0 reference at the sample's position.
        let y = reference.planes[0], u = reference.planes[1], v = reference.planes[2]
        for row in 0..<h {
            for x in 0..<w {
                data[0]![row * Int(lines[0]) + x] = fullLuma(y.base[row * y.stride + x])
            }
        }
        let cw = (w + (1 << sx) - 1) >> sx, ch = (h + (1 << sy) - 1) >> sy
        for row in 0..<ch {
            for x in 0..<cw {
                let ry = (row << sy) / 2, rx = (x << sx) / 2
                data[1]![row * Int(lines[1]) + x] = fullChroma(u.base[ry * u.stride + rx])
                data[2]![row * Int(lines[2]) + x] = fullChroma(v.base[ry * v.stride + rx])
            }
        }
        XCTAssertEqual(avcodec_send_frame(c, f), 0)
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        let p = try XCTUnwrap(packet)
        XCTAssertEqual(avcodec_receive_packet(c, p), 0)
        return Array(UnsafeBufferPointer(start: p.pointee.data, count: Int(p.pointee.size)))
    }

    /// `jpeg` with every segment of marker `marker` before its scan taken out.
    static func segments(of jpeg: [UInt8], without marker: UInt8) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        var p = 2
        while p + 4 <= jpeg.count, jpeg[p] == 0xFF, jpeg[p + 1] != 0xDA {
            let length = Int(jpeg[p + 2]) << 8 | Int(jpeg[p + 3])
            if jpeg[p + 1] != marker { out += jpeg[p..<(p + 2 + length)] }
            p += 2 + length
        }
        return out + jpeg[p...]
    }

    static func fullLuma(_ y: UInt8) -> UInt8 {
        UInt8(max(0, min(255, ((Int(y) - 16) * 255 + 109) / 219)))
    }

    static func fullChroma(_ c: UInt8) -> UInt8 {
        let scaled = Double(Int(c) - 128) * 255 / 224
        return UInt8(max(0, min(255, 128 + Int(scaled.rounded()))))
    }

    /// PSNR of `plane` of `a` against `b` (same size), in dB; nil when identical.
    static func psnr(_ a: PixelBuffer, _ b: PixelBuffer, plane: Int) -> Double? {
        let pa = a.planes[plane], pb = b.planes[plane]
        var sum = 0.0
        for row in 0..<pa.height {
            for x in 0..<pa.width {
                let d = Double(pa.base[row * pa.stride + x]) - Double(pb.base[row * pb.stride + x])
                sum += d * d
            }
        }
        guard sum > 0 else { return nil }
        return 10 * log10(255 * 255 / (sum / Double(pa.width * pa.height)))
    }

    /// An NV12 buffer as I420, for comparing with an I420 reference.
    static func asI420(_ nv12: PixelBuffer) -> PixelBuffer {
        let pool = PixelBufferPool(format: .i420, width: nv12.width, height: nv12.height, capacity: 1)
        let out = pool.tryTake()!
        FrameConverter.convert(.init(format: .nv12, width: nv12.width, height: nv12.height,
                                     planes: [UnsafeRawPointer(nv12.planes[0].base), UnsafeRawPointer(nv12.planes[1].base)],
                                     strides: [nv12.planes[0].stride, nv12.planes[1].stride]), into: out)
        return out
    }
}
