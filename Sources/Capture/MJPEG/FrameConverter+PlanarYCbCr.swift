import Frames
// Decoded JPEG pictures → pool buffers. Kept apart from FrameConverter.swift: camera
// layouts come with fixed subsampling and limited range, decoded JPEGs with any of
// 4:2:0, 4:2:2, 4:4:0, 4:4:4, 4:1:1 or luma only, and usually full range.

extension FrameConverter {
    /// Planar YCbCr as a decoder leaves it: a luma plane and, unless `isGrey`, Cb and Cr
    /// planes subsampled by `1 << chromaShiftX` across and `1 << chromaShiftY` down.
    public struct PlanarYCbCrImage {
        public var width: Int
        public var height: Int
        /// Y, Cb, Cr; only Y when the picture is grey.
        public var planes: [UnsafeRawPointer]
        public var strides: [Int]
        public var chromaShiftX: Int
        public var chromaShiftY: Int
        /// JPEG's full range (0–255 for every component) rather than video's 16–235/16–240.
        public var fullRange: Bool

        public init(width: Int, height: Int, planes: [UnsafeRawPointer], strides: [Int],
                    chromaShiftX: Int, chromaShiftY: Int, fullRange: Bool) {
            precondition(planes.count == 1 || planes.count == 3, "luma only, or luma and two chroma planes")
            precondition(strides.count == planes.count)
            precondition((0...2).contains(chromaShiftX) && (0...2).contains(chromaShiftY), "subsampling up to 4:1")
            self.width = width
            self.height = height
            self.planes = planes
            self.strides = strides
            self.chromaShiftX = chromaShiftX
            self.chromaShiftY = chromaShiftY
            self.fullRange = fullRange
        }

        public var isGrey: Bool { planes.count == 1 }
    }

    /// Full range → limited range, the BT.601 way: Y' = 16 + Y·219/255,
    /// C' = 128 + (C − 128)·224/255, rounded to nearest.
    static let fullToLimitedLuma: [UInt8] = (0..<256).map { UInt8(16 + ($0 * 219 + 127) / 255) }
    static let fullToLimitedChroma: [UInt8] = (0..<256).map { c in
        let scaled = (c - 128) * 224
        return UInt8(128 + (scaled >= 0 ? (scaled + 127) / 255 : -((-scaled + 127) / 255)))
    }

    /// Fills `destination` (NV12 or I420) in one pass, from its row `firstRow` on: a whole picture, or one
    /// strip of it as a decoder leaves it (`firstRow` even, so that chroma rows fall within the strip).
    /// Full-range pictures become limited range on the way, so every source camrec records gives the
    /// encoder the same range (the H.264 stream signals none, which players read as limited). Each
    /// destination chroma sample is the rounded mean of the source chroma samples its 2x2 block covers.
    public static func convert(_ source: PlanarYCbCrImage, into destination: PixelBuffer, atRow firstRow: Int = 0) {
        precondition(source.width == destination.width && firstRow + source.height <= destination.height
                     && firstRow % 2 == 0, "conversion does not scale")
        // Arithmetic rather than the tables, so the compiler vectorizes the rows: equal to them for all 256
        // values (XCTest `testRangeArithmeticEqualsTheTables`). 1080p 4:2:2: the pass took 16 % of an MJPEG
        // recording's CPU with the tables.
        let luma = destination.planes[0]
        let src = source.planes[0].assumingMemoryBound(to: UInt8.self)
        for row in 0..<source.height {
            let s = src + row * source.strides[0]
            let d = luma.base + (firstRow + row) * luma.stride
            if source.fullRange {
                for x in 0..<source.width { d[x] = limitedLuma(s[x]) }
            } else {
                d.update(from: s, count: source.width)
            }
        }
        let chromaWidth = (source.width + 1) / 2
        let chromaHeight = (source.height + 1) / 2
        let nv12 = destination.format == .nv12
        if source.isGrey {
            for plane in destination.planes.dropFirst() {
                for row in firstRow / 2..<min(plane.height, firstRow / 2 + chromaHeight) {
                    (plane.base + row * plane.stride).update(repeating: 128, count: plane.width)
                }
            }
            return
        }
        let sx = source.chromaShiftX, sy = source.chromaShiftY
        let lastColumn = ((source.width + (1 << sx) - 1) >> sx) - 1
        let lastRow = ((source.height + (1 << sy) - 1) >> sy) - 1
        let cb = source.planes[1].assumingMemoryBound(to: UInt8.self)
        let cr = source.planes[2].assumingMemoryBound(to: UInt8.self)
        let full = source.fullRange
        for row in 0..<chromaHeight {
            // Source rows and columns under the destination's 2x2 block (the same one twice
            // when the source is subsampled as much, or at an odd edge).
            let r0 = (2 * row) >> sy
            let r1 = 2 * row + 1 < source.height ? min((2 * row + 1) >> sy, lastRow) : r0
            let cbTop = cb + r0 * source.strides[1], cbBottom = cb + r1 * source.strides[1]
            let crTop = cr + r0 * source.strides[2], crBottom = cr + r1 * source.strides[2]
            let du = destination.planes[1].base + (firstRow / 2 + row) * destination.planes[1].stride
            let dv = nv12 ? du : destination.planes[2].base + (firstRow / 2 + row) * destination.planes[2].stride
            if sx == 1 && source.width % 2 == 0 && nv12 && full {
                // Halved across already (4:2:0, 4:2:2: what cameras send): the block's two columns are one
                // sample, so the mean of four is that of the two rows. A loop of its own, with no branch in it.
                for x in 0..<chromaWidth {
                    du[2 * x] = limitedChroma(UInt8(truncatingIfNeeded: (UInt16(cbTop[x]) &+ UInt16(cbBottom[x]) &+ 1) >> 1))
                    du[2 * x + 1] = limitedChroma(UInt8(truncatingIfNeeded: (UInt16(crTop[x]) &+ UInt16(crBottom[x]) &+ 1) >> 1))
                }
                continue
            }
            for x in 0..<chromaWidth {
                let c0 = (2 * x) >> sx
                let c1 = 2 * x + 1 < source.width ? min((2 * x + 1) >> sx, lastColumn) : c0
                let u = UInt8(truncatingIfNeeded: (UInt16(cbTop[c0]) &+ UInt16(cbTop[c1]) &+ UInt16(cbBottom[c0]) &+ UInt16(cbBottom[c1]) &+ 2) >> 2)
                let v = UInt8(truncatingIfNeeded: (UInt16(crTop[c0]) &+ UInt16(crTop[c1]) &+ UInt16(crBottom[c0]) &+ UInt16(crBottom[c1]) &+ 2) >> 2)
                if nv12 {
                    du[2 * x] = full ? limitedChroma(u) : u
                    du[2 * x + 1] = full ? limitedChroma(v) : v
                } else {
                    du[x] = full ? limitedChroma(u) : u
                    dv[x] = full ? limitedChroma(v) : v
                }
            }
        }
    }

    /// `fullToLimitedLuma[y]` by arithmetic: 16 + round(y·219/255).
    @inline(__always) static func limitedLuma(_ y: UInt8) -> UInt8 {
        UInt8(truncatingIfNeeded: ((UInt32(y) &* 56281 &+ 33024) >> 16) &+ 16)
    }

    /// `fullToLimitedChroma[c]` by arithmetic: 128 + (c − 128)·224/255, rounded away from 128.
    @inline(__always) static func limitedChroma(_ c: UInt8) -> UInt8 {
        UInt8(truncatingIfNeeded: ((UInt32(c) &* 57567 &+ 4224) >> 16) &+ 16)
    }
}
