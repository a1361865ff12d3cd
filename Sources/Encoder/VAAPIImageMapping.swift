import CFFmpeg
import Frames

/// The upload path that does not trust `vaDeriveImage`: an NV12 VA image of its own
/// (`vaCreateImage`), mapped for writing only, which the driver copies into a surface with
/// `vaPutImage`. One more copy than a derived mapping, but it works wherever the driver's
/// derived mapping is not the surface (a stride or chroma plane that differs, a map that fails).
///
/// FFmpeg's `av_hwframe_map` cannot be made to take this path for writing once the driver can
/// derive, so camrec calls libva itself. Created once and reused, frame after frame.
final class VAAPIImageMapping {
    private let display: VADisplay
    private var image = VAImage()
    private var mapped: UnsafeMutableRawPointer?

    init(display: VADisplay, width: Int, height: Int) throws {
        self.display = display
        var format = VAImageFormat()
        format.fourcc = Self.nv12
        format.byte_order = 1  // VA_LSB_FIRST
        format.bits_per_pixel = 12
        guard let w = Int32(exactly: width), let h = Int32(exactly: height) else {
            throw EncoderError(.failed, "a VA image of \(width)x\(height) is too large")
        }
        let status = vaCreateImage(display, &format, w, h, &image)
        guard status == camrec_VA_STATUS_SUCCESS else {
            throw EncoderError(.failed, "vaCreateImage failed: \(Self.describe(status))")
        }
        guard image.format.fourcc == Self.nv12, image.num_planes >= 2 else {
            vaDestroyImage(display, image.image_id)
            throw EncoderError(.failed, "vaCreateImage gave no NV12 image")
        }
    }

    deinit {
        unmap()
        vaDestroyImage(display, image.image_id)
    }

    static let nv12 = UInt32(0x3231_564E)  // 'NV12'

    /// Maps the image for writing: the Y plane, then the interleaved CbCr plane.
    func map() throws -> [PlaneMemory] {
        if mapped == nil {
            var pointer: UnsafeMutableRawPointer?
            let status = vaMapBuffer(display, image.buf, &pointer)
            guard status == camrec_VA_STATUS_SUCCESS, let pointer else {
                throw EncoderError(.failed, "vaMapBuffer of a VA image failed: \(Self.describe(status))")
            }
            mapped = pointer
        }
        let base = mapped!.assumingMemoryBound(to: UInt8.self)
        return withUnsafeBytes(of: image.offsets) { offsetsRaw in
            withUnsafeBytes(of: image.pitches) { pitchesRaw in
                let offsets = offsetsRaw.bindMemory(to: UInt32.self), pitches = pitchesRaw.bindMemory(to: UInt32.self)
                return (0..<2).map { PlaneMemory(base: base + Int(offsets[$0]), stride: Int(pitches[$0])) }
            }
        }
    }

    /// Ends the write and has the driver copy the image into `surface` (vaPutImage).
    func put(into surface: VASurfaceID) throws {
        unmap()
        let w = UInt32(image.width), h = UInt32(image.height)
        let status = vaPutImage(display, surface, image.image_id, 0, 0, w, h, 0, 0, w, h)
        guard status == camrec_VA_STATUS_SUCCESS else {
            throw EncoderError(.failed, "vaPutImage into a VA surface failed: \(Self.describe(status))")
        }
    }

    func unmap() {
        guard mapped != nil else { return }
        vaUnmapBuffer(display, image.buf)
        mapped = nil
    }

    static func describe(_ status: VAStatus) -> String {
        vaErrorStr(status).map { String(cString: $0) } ?? "VA status \(status)"
    }
}
