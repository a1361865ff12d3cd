import Frames
/// What the user asked for; nil means "camrec chooses".
public struct V4L2FormatRequest: Sendable, Equatable {
    public var size: FrameSize?
    public var framesPerSecond: Double?
    public var pixelFormat: V4L2PixelFormat?

    public init(size: FrameSize? = nil, framesPerSecond: Double? = nil, pixelFormat: V4L2PixelFormat? = nil) {
        self.size = size
        self.framesPerSecond = framesPerSecond
        self.pixelFormat = pixelFormat
    }
}

/// The format, size and frame interval camrec will ask the device for.
public struct V4L2FormatChoice: Sendable, Equatable {
    public var pixelFormat: V4L2PixelFormat
    public var size: FrameSize
    /// nil when the driver lists no rates and none was asked for: the device's own rate is kept.
    public var interval: V4L2Fraction?
}

/// Picks a capture format from what a device offers.
///
/// Order of preference, cheapest conversion first (the encoder takes 4:2:0 planar):
///  1. NV12 and YU12 (I420), and their multi-planar variants: a plain copy of rows;
///  2. packed 4:2:2 (YUYV, UYVY, YVYU, VYUY): what nearly every UVC webcam sends uncompressed;
///  3. the other YUV layouts camrec converts (NV21, YV12, NV16, NV61, 422P);
///  4. RGB (RGB24, BGR24, the 32-bit orders), converted with BT.601;
///  5. MJPEG (and 'JPEG'), decoded with libavcodec: costs a decode per frame and carries the
///     camera's compression artefacts, so any uncompressed colour format of the same size
///     and rate wins;
///  6. GREY (luma only): a colour MJPEG beats it;
///  7. formats only libv4lconvert converts (`libraryConverted`: Bayer, old webcams' vendor
///     formats), taken only when nothing above is offered, or when asked for.
/// H.264 and H.265 (`H264`, `HEVC`) are never chosen by themselves; asked for with `--pixel-format`,
/// they are recorded as the camera sends them (`--encoder camera`). Other compressed formats are
/// listed but never chosen, and asking for one with `--pixel-format` explains that.
///
/// Size: `--size` if given; else 1280x720 if any usable format offers it, else the
/// largest size within 1920x1080, else the smallest (with `--fps`, among sizes offering
/// that rate). Rate: `--fps` if given (within 1%,
/// so 29.97 counts as 30); else 30 fps if any usable format offers it at that size, else the
/// fastest below 30.
/// Size matters more than format: a YUYV 1280x720 beats an NV12 640x480, and an MJPEG
/// 1280x720 beats a YUYV 640x480. Rate matters more than format too: at 1280x720, MJPEG
/// at 30 fps beats YUYV at 10 fps (USB 2.0 webcams can't send more uncompressed).
/// Among formats at the chosen size and rate the order above decides.
public enum V4L2FormatChooser {
    public static let preference: [V4L2PixelFormat] = [
        .nv12, .nv12m, .yuv420, .yuv420m,
        .yuyv, .uyvy, .yvyu, .vyuy,
        .nv21, .nv21m, .yvu420, .yvu420m, .nv16, .nv16m, .nv61, .nv61m, .yuv422p,
        .rgb24, .bgr24, .xbgr32, .bgr32, .abgr32, .xrgb32, .rgb32, .argb32, .rgbx32, .rgba32, .bgrx32, .bgra32,
        .mjpeg, .jpeg,
        .grey,
    ]

    static let defaultSize = FrameSize(width: 1280, height: 720)
    static let largestDefault = FrameSize(width: 1920, height: 1080)

    public static func choose(from offers: [V4L2FormatOffer], request: V4L2FormatRequest,
                              device: String = "the camera",
                              libraryConverted: Set<V4L2PixelFormat> = []) throws(CaptureError) -> V4L2FormatChoice {
        let offeredList = offers.map(\.pixelFormat.description).joined(separator: ", ")
        func rank(_ format: V4L2PixelFormat) -> Int { preference.firstIndex(of: format) ?? preference.count }
        let usable = offers
            .filter { ($0.pixelFormat.isRecordable && preference.contains($0.pixelFormat))
                || libraryConverted.contains($0.pixelFormat)
                || ($0.pixelFormat.isCompressedVideo && $0.pixelFormat == request.pixelFormat) }
            .sorted { rank($0.pixelFormat) < rank($1.pixelFormat) }
        var candidates = usable
        if let wanted = request.pixelFormat {
            guard offers.contains(where: { $0.pixelFormat == wanted }) else {
                throw CaptureError(.unsupportedFormat,
                                   "\(device) does not offer pixel format \(wanted); it offers: \(offeredList)")
            }
            candidates = usable.filter { $0.pixelFormat == wanted }
            guard !candidates.isEmpty else {
                throw CaptureError(.unsupportedFormat,
                                   "camrec cannot convert \(wanted) from \(device), not even with libv4lconvert; "
                                   + "use one of: \(usable.map(\.pixelFormat.description).joined(separator: ", "))")
            }
        }
        guard !candidates.isEmpty else {
            throw CaptureError(.unsupportedFormat, "\(device) offers no pixel format camrec can record "
                               + "(it offers: \(offeredList.isEmpty ? "none" : offeredList))")
        }

        // Size.
        let size: FrameSize
        if let wanted = request.size {
            size = wanted
            if !candidates.contains(where: { $0.sizes.offer(for: wanted) != nil }) {
                throw CaptureError(.unsupportedFormat, "\(device) does not offer \(wanted)"
                                   + (request.pixelFormat.map { " in \($0)" } ?? "")
                                   + "; sizes offered: \(sizeList(candidates))")
            }
        } else {
            size = defaultSize(candidates, framesPerSecond: request.framesPerSecond)
        }
        let atSize = candidates.compactMap { offer in offer.sizes.offer(for: size).map { (offer, $0) } }

        // Rate.
        if let fps = request.framesPerSecond {
            for (offer, sizeOffer) in atSize {
                if let interval = sizeOffer.intervals.offers(framesPerSecond: fps) {
                    return V4L2FormatChoice(pixelFormat: offer.pixelFormat, size: size, interval: interval)
                }
            }
            let all = atSize.map(\.1.intervals.description)
            let rates = Set(all).count == 1 ? all[0]
                : atSize.map { "\($0.0.pixelFormat): \($0.1.intervals.description)" }.joined(separator: "; ")
            throw CaptureError(.unsupportedFormat,
                               "\(device) does not offer \(formatRate(fps)) fps at \(size); rates offered at \(size): \(rates)")
        }
        // The best default rate any format offers at this size, then the first format (by
        // preference) that has it.
        let defaults = atSize.map { (format: $0.0.pixelFormat, interval: $0.1.intervals.defaultInterval) }
        let best = defaults.min { rateRank($0.interval) < rateRank($1.interval) }!
        return V4L2FormatChoice(pixelFormat: best.format, size: size, interval: best.interval)
    }

    /// Orders default rates, best first: 30 fps, then the fastest below 30, then the slowest
    /// above. A format whose driver lists no rates (nil) keeps the device's own rate, which
    /// ranks after every listed one. `min` keeps the first of equals, i.e. the preferred format.
    static func rateRank(_ interval: V4L2Fraction?) -> (Int, Double) {
        guard let fps = interval?.framesPerSecond, fps > 0 else { return (3, 0) }
        if interval!.matches(framesPerSecond: 30) { return (0, 0) }
        return fps < 30 ? (1, -fps) : (2, fps)
    }

    /// With `--fps` given, only sizes offered at that rate count: `--fps 30` alone picks
    /// the best size that runs at 30.
    static func defaultSize(_ candidates: [V4L2FormatOffer], framesPerSecond fps: Double? = nil) -> FrameSize {
        func runs(_ offer: V4L2SizeOffer) -> Bool { fps.map { offer.intervals.offers(framesPerSecond: $0) != nil } ?? true }
        if candidates.contains(where: { $0.sizes.offer(for: defaultSize).map(runs) ?? false }) { return defaultSize }
        let discrete = candidates.flatMap { offer -> [FrameSize] in
            if case .discrete(let list) = offer.sizes { return list.filter(runs).map(\.size) }
            return []
        }
        let fitting = discrete.filter { $0.width <= largestDefault.width && $0.height <= largestDefault.height }
        if let best = fitting.max(by: { $0.width * $0.height < $1.width * $1.height }) { return best }
        if let smallest = discrete.min(by: { $0.width * $0.height < $1.width * $1.height }) { return smallest }
        // Only ranges offered and 1280x720 not in them: clamp into the first range.
        for offer in candidates {
            if case .range(let minimum, let maximum, _, _) = offer.sizes {
                return FrameSize(width: min(max(defaultSize.width, minimum.width), maximum.width),
                                 height: min(max(defaultSize.height, minimum.height), maximum.height))
            }
        }
        return defaultSize
    }

    static func sizeList(_ candidates: [V4L2FormatOffer]) -> String {
        var seen: [FrameSize] = []
        var ranges: [String] = []
        for offer in candidates {
            switch offer.sizes {
            case .discrete(let list):
                for s in list.map(\.size) where !seen.contains(s) { seen.append(s) }
            case .range:
                ranges.append(offer.sizes.description)
            case .unknown:
                break
            }
        }
        seen.sort { ($0.width * $0.height, $0.width) < ($1.width * $1.height, $1.width) }
        return (seen.map(\.description) + ranges).joined(separator: ", ")
    }
}
