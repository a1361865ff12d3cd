import CFFmpeg
import Libav

/// How frames are written into VA surfaces, chosen once at start by checking the driver.
///
/// Real drivers' `vaDeriveImage` is not always the surface: iHD maps tiled surfaces through a
/// linear shadow copy, Mesa may map only the luma texture, and a pitch or chroma offset can
/// differ from the memory behind it. So a pattern is written through the derived mapping and
/// read back through the driver's other path (`av_hwframe_transfer_data`: `vaCreateImage` +
/// `vaGetImage`); only when it comes back identical are frames written in place.
struct VAAPIUploadPath {
    enum Kind { case derive, image }
    var kind: Kind
    /// Why this path, for the log.
    var reason: String

    var isDirect: Bool { kind == .derive }

    static func choose(frames: UnsafeMutablePointer<AVBufferRef>, display: VADisplay, width: Int, height: Int) -> VAAPIUploadPath {
        func image(_ why: String) -> VAAPIUploadPath { VAAPIUploadPath(kind: .image, reason: why) }
        guard let surface = av_frame_alloc(), let mapping = av_frame_alloc(), let readBack = av_frame_alloc() else {
            return image("out of memory checking vaDeriveImage")
        }
        var frames3 = [Optional(surface), Optional(mapping), Optional(readBack)]
        defer { for i in frames3.indices { av_frame_free(&frames3[i]) } }
        guard av_hwframe_get_buffer(frames, surface, 0) >= 0 else { return image("no VA surface to check vaDeriveImage with") }
        let surfaceID = VASurfaceID(UInt(bitPattern: surface.pointee.data.3))

        var derived = VAImage()
        guard vaDeriveImage(display, surfaceID, &derived) == camrec_VA_STATUS_SUCCESS else {
            _ = LibavLogCapture.takeLastError()
            return image("the driver has no vaDeriveImage for these surfaces")
        }
        let fourcc = derived.format.fourcc
        vaDestroyImage(display, derived.image_id)
        guard fourcc == VAAPIImageMapping.nv12 else { return image("vaDeriveImage gives no NV12 view of the surface") }

        mapping.pointee.format = AV_PIX_FMT_NV12.rawValue
        let status = av_hwframe_map(mapping, surface, Int32(AV_HWFRAME_MAP_WRITE | AV_HWFRAME_MAP_OVERWRITE))
        guard status >= 0 else {
            let detail = LibavLogCapture.takeLastError().map { " (\($0))" } ?? ""
            return image("mapping a derived image fails: \(libavErrorDescription(status))\(detail)")
        }
        let written = planes(of: mapping)
        for plane in 0..<2 { fill(written[plane], rows: rows(plane, height), bytes: rowBytes(width), plane: plane) }
        av_frame_unref(mapping)  // unmaps: the pattern is in the surface now, if the mapping was it

        readBack.pointee.format = AV_PIX_FMT_NV12.rawValue
        readBack.pointee.width = Int32(clamping: width)
        readBack.pointee.height = Int32(clamping: height)
        guard av_frame_get_buffer(readBack, 0) >= 0, av_hwframe_transfer_data(readBack, surface, 0) >= 0 else {
            _ = LibavLogCapture.takeLastError()
            return image("a surface written through vaDeriveImage could not be read back (vaGetImage) to check it")
        }
        let read = planes(of: readBack)
        for plane in 0..<2 {
            if let row = firstDifferentRow(read[plane], rows: rows(plane, height), bytes: rowBytes(width), plane: plane) {
                let name = plane == 0 ? "luma" : "chroma"
                return image("vaDeriveImage does not map the surface faithfully: a pattern written through it read back "
                    + "different in the \(name) plane from row \(row) (pitch \(written[plane].stride) reported)")
            }
        }
        return VAAPIUploadPath(kind: .derive, reason: "a pattern written through vaDeriveImage read back identical")
    }

    private static func rows(_ plane: Int, _ height: Int) -> Int { plane == 0 ? height : (height + 1) / 2 }
    /// NV12: the chroma row holds Cb,Cr pairs, as many bytes as an even luma row.
    private static func rowBytes(_ width: Int) -> Int { (width + 1) / 2 * 2 }

    private static func planes(of frame: UnsafeMutablePointer<AVFrame>) -> [(base: UnsafeMutablePointer<UInt8>, stride: Int)] {
        withUnsafeBytes(of: frame.pointee.data) { dataRaw in
            withUnsafeBytes(of: frame.pointee.linesize) { lineRaw in
                let data = dataRaw.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
                let lines = lineRaw.bindMemory(to: Int32.self)
                return (0..<2).map { (data[$0]!, Int(lines[$0])) }
            }
        }
    }

    /// A value no stride, offset or dropped write can keep: it depends on plane, row and column.
    private static func pattern(_ plane: Int, _ row: Int, _ column: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: column &* 7 &+ row &* 13 &+ plane &* 101 &+ (column >> 8) &* 3)
    }

    private static func fill(_ p: (base: UnsafeMutablePointer<UInt8>, stride: Int), rows: Int, bytes: Int, plane: Int) {
        for r in 0..<rows { for c in 0..<bytes { p.base[r * p.stride + c] = pattern(plane, r, c) } }
    }

    private static func firstDifferentRow(_ p: (base: UnsafeMutablePointer<UInt8>, stride: Int), rows: Int, bytes: Int,
                                          plane: Int) -> Int? {
        for r in 0..<rows { for c in 0..<bytes where p.base[r * p.stride + c] != pattern(plane, r, c) { return r } }
        return nil
    }
}
