import CV4L2
import Glibc
import SystemPackage
import Frames

/// Opening the node and settling its format and rate, before any output exists.
extension V4L2CaptureSource {
    /// The offered formats camrec can't convert itself but libv4lconvert can (it converts a
    /// blank frame of the format's geometry from `VIDIOC_TRY_FMT`). Compressed formats are
    /// left out: a blank frame proves nothing about them. Single-planar API only, as libv4lconvert.
    static func libraryConvertible(_ offers: [V4L2FormatOffer], device: V4L2Device, type: v4l2_buf_type,
                                   request: V4L2FormatRequest) -> Set<V4L2PixelFormat> {
        let compressed: Set<V4L2PixelFormat> = [.mjpeg, .jpeg, .h264]
        var convertible: Set<V4L2PixelFormat> = []
        for offer in offers where offer.pixelFormat.cameraLayout == nil && !compressed.contains(offer.pixelFormat) {
            // Only worth the probe when it may be chosen: asked for, or nothing else is offered.
            let asked = request.pixelFormat == offer.pixelFormat
            let othersUsable = offers.contains { $0.pixelFormat.isRecordable }
            guard asked || (request.pixelFormat == nil && !othersUsable) else { continue }
            var format = v4l2_format()
            format.type = type.rawValue
            let size = request.size ?? V4L2FormatChooser.defaultSize([offer])
            format.fmt.pix.width = UInt32(size.width)
            format.fmt.pix.height = UInt32(size.height)
            format.fmt.pix.pixelformat = offer.pixelFormat.rawValue
            format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            guard (try? device.ioctl(.tryFormat, &format)) != nil,
                  format.fmt.pix.pixelformat == offer.pixelFormat.rawValue,
                  LibV4LConverter(fd: device.fd, source: format) != nil else { continue }
            convertible.insert(offer.pixelFormat)
        }
        return convertible
    }

    static func openError(_ error: Errno, path: String) -> CaptureError {
        switch error.rawValue {
        case ENOENT:
            return CaptureError(.sourceMissing, "no such device \(path); "
                                + V4L2DeviceDirectory.captureNodeSummary(system: LinuxV4L2System()))
        case EACCES, EPERM:
            return CaptureError(.permissionDenied, "cannot open \(path): permission denied "
                                + "(add your user to the 'video' group: sudo usermod -aG video $USER, then log in again)")
        case EBUSY:
            return CaptureError(.deviceBusy, "\(path) is busy: another program is using it (\(error))")
        case ENODEV, ENXIO:
            return CaptureError(.sourceMissing, "\(path) exists but has no device behind it (unplugged?)")
        default:
            return CaptureError(.deviceFailed, "cannot open \(path): \(error)")
        }
    }

    static func busyOr(_ error: V4L2IoctlError, path: String, _ otherwise: CaptureError) -> CaptureError {
        if error.errno.rawValue == EBUSY {
            return CaptureError(.deviceBusy, "\(path) is busy: another program is streaming from it (\(error))")
        }
        if error.errno.rawValue == ENODEV {
            return CaptureError(.sourceMissing, "\(path) went away while camrec set it up (\(error))")
        }
        return otherwise
    }

    /// `VIDIOC_S_FMT`, then checks what the driver made of it. Returns the size and each
    /// memory plane's `bytesperline` (one entry unless the format is multi-planar).
    static func setFormat(_ device: V4L2Device, type: v4l2_buf_type, multiplanar: Bool,
                                  choice: V4L2FormatChoice, layout: CameraPixelLayout?, request: V4L2FormatRequest,
                                  path: String, bytesPerLine wanted: Int?) throws(CaptureError) -> (size: FrameSize, bytesPerLine: [Int]) {
        var format = v4l2_format()
        format.type = type.rawValue
        if multiplanar {
            format.fmt.pix_mp.width = UInt32(choice.size.width)
            format.fmt.pix_mp.height = UInt32(choice.size.height)
            format.fmt.pix_mp.pixelformat = choice.pixelFormat.rawValue
            format.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
            if let wanted {
                withUnsafeMutableBytes(of: &format.fmt.pix_mp.plane_fmt) { raw in
                    let planes = raw.bindMemory(to: v4l2_plane_pix_format.self)
                    for p in 0..<2 { planes[p].bytesperline = UInt32(wanted) }
                }
            }
        } else {
            format.fmt.pix.width = UInt32(choice.size.width)
            format.fmt.pix.height = UInt32(choice.size.height)
            format.fmt.pix.pixelformat = choice.pixelFormat.rawValue
            format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            // A wish only: drivers may keep their own (UVC does); then capture copies.
            format.fmt.pix.bytesperline = UInt32(wanted ?? 0)
        }
        do {
            try device.ioctl(.setFormat, &format)
        } catch {
            throw busyOr(error, path: path, CaptureError(.unsupportedFormat, "\(path) refused \(choice.pixelFormat) "
                                                         + "\(choice.size) (\(error))"))
        }
        let pixelformat = multiplanar ? format.fmt.pix_mp.pixelformat : format.fmt.pix.pixelformat
        let size = multiplanar
            ? FrameSize(width: Int(format.fmt.pix_mp.width), height: Int(format.fmt.pix_mp.height))
            : FrameSize(width: Int(format.fmt.pix.width), height: Int(format.fmt.pix.height))
        let field = multiplanar ? format.fmt.pix_mp.field : format.fmt.pix.field
        guard pixelformat == choice.pixelFormat.rawValue else {
            throw CaptureError(.unsupportedFormat, "\(path) answered \(choice.pixelFormat) with "
                               + "\(V4L2PixelFormat(rawValue: pixelformat)) instead")
        }
        if size != choice.size && request.size != nil {
            throw CaptureError(.unsupportedFormat, "\(path) cannot deliver \(choice.size) in \(choice.pixelFormat); "
                               + "the driver offered \(size)")
        }
        guard field == V4L2_FIELD_NONE.rawValue || field == V4L2_FIELD_ANY.rawValue else {
            throw CaptureError(.unsupportedFormat, "\(path) delivers interlaced video (field order \(field)); "
                               + "camrec records progressive frames only")
        }
        // Compressed frames and formats only libv4lconvert knows (layout nil): their rows
        // are not ours to check; drivers report 0 or anything.
        let minimum = layout.map { V4L2PlaneGeometry.minimumBytesPerLine($0, width: size.width) } ?? 0
        if multiplanar {
            let planes = Int(format.fmt.pix_mp.num_planes)
            let lines: [Int] = withUnsafeBytes(of: format.fmt.pix_mp.plane_fmt) { raw in
                let p = raw.bindMemory(to: v4l2_plane_pix_format.self)
                return (0..<min(planes, p.count)).map { Int(p[$0].bytesperline) }
            }
            guard !lines.isEmpty else {
                throw CaptureError(.unsupportedFormat, "\(path) reported a format with no planes")
            }
            // A driver that leaves bytesperline 0 means tightly packed rows.
            return (size, lines.enumerated().map { $0.element > 0 ? $0.element : ($0.offset == 0 ? minimum : minimum / 2) })
        }
        let bpl = Int(format.fmt.pix.bytesperline)
        guard bpl == 0 || bpl >= minimum else {
            throw CaptureError(.unsupportedFormat, "\(path) reported \(bpl) bytes per line for \(size.width) "
                               + "\(choice.pixelFormat) pixels, fewer than the \(minimum) they need")
        }
        return (size, [bpl > 0 ? bpl : minimum])
    }

    /// Sets the frame rate with `VIDIOC_S_PARM` when the driver supports it, and returns
    /// the rate it reports back.
    static func setRate(_ device: V4L2Device, type: v4l2_buf_type, choice: V4L2FormatChoice,
                                request: V4L2FormatRequest, path: String) throws(CaptureError) -> Double {
        var parm = v4l2_streamparm()
        parm.type = type.rawValue
        if (try? device.ioctl(.getParameters, &parm)) == nil {
            // Older kernels take only the single-planar type for G/S_PARM.
            parm = v4l2_streamparm()
            parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            if (try? device.ioctl(.getParameters, &parm)) == nil {
                return request.framesPerSecond ?? choice.interval?.framesPerSecond ?? 30
            }
        }
        let settable = parm.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0
        if settable, let interval = choice.interval {
            parm.parm.capture.timeperframe = v4l2_fract(numerator: interval.numerator, denominator: interval.denominator)
            do {
                try device.ioctl(.setParameters, &parm)
            } catch {
                throw busyOr(error, path: path, CaptureError(.unsupportedFormat,
                                                             "\(path) refused \(interval) fps (\(error))"))
            }
        }
        let actual = V4L2Fraction(numerator: parm.parm.capture.timeperframe.numerator,
                                  denominator: parm.parm.capture.timeperframe.denominator)
        if let fps = request.framesPerSecond {
            if actual.framesPerSecond > 0 && !actual.matches(framesPerSecond: fps) {
                throw CaptureError(.unsupportedFormat, "\(path) runs at \(actual) fps at \(choice.size), "
                                   + "not the \(formatRate(fps)) fps asked for")
            }
            return actual.framesPerSecond > 0 ? actual.framesPerSecond : fps
        }
        return actual.framesPerSecond > 0 ? actual.framesPerSecond : (choice.interval?.framesPerSecond ?? 30)
    }
}
