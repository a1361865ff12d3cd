import CV4L2
import Glibc
import Frames
import SystemSupport

/// A frame interval as V4L2 gives it: seconds per frame as a fraction.
public struct V4L2Fraction: Hashable, Sendable, CustomStringConvertible {
    public var numerator: UInt32
    public var denominator: UInt32

    public init(numerator: UInt32, denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The interval for a frame rate; 29.97 becomes 1000/29970.
    public init(framesPerSecond fps: Double) {
        if fps == fps.rounded() {
            self.init(numerator: 1, denominator: UInt32(fps))
        } else {
            self.init(numerator: 1000, denominator: UInt32((fps * 1000).rounded()))
        }
    }

    public var framesPerSecond: Double {
        numerator == 0 ? 0 : Double(denominator) / Double(numerator)
    }

    /// "30", "12.5", "29.97" (frames per second).
    public var description: String {
        var text = formatRate(framesPerSecond)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// Whether this interval gives `fps` within 1% (so 29.97 answers a request for 30).
    func matches(framesPerSecond fps: Double) -> Bool {
        abs(framesPerSecond - fps) <= fps * 0.01
    }
}

/// The frame rates a device offers at one format and size.
public enum V4L2FrameIntervals: Sendable, Equatable {
    case discrete([V4L2Fraction])
    /// Any interval from `shortest` (fastest) to `longest`.
    case range(shortest: V4L2Fraction, longest: V4L2Fraction)
    /// The driver does not enumerate intervals; `VIDIOC_S_PARM` will say what it does.
    case unknown

    func offers(framesPerSecond fps: Double) -> V4L2Fraction? {
        switch self {
        case .discrete(let list):
            return list.first { $0.matches(framesPerSecond: fps) }
        case .range(let shortest, let longest):
            let low = longest.framesPerSecond * 0.99, high = shortest.framesPerSecond * 1.01
            return (low...high).contains(fps) ? V4L2Fraction(framesPerSecond: fps) : nil
        case .unknown:
            return V4L2Fraction(framesPerSecond: fps)
        }
    }

    /// The rate chosen when none is asked for: 30 fps if offered, else the fastest
    /// below 30 (a webcam at 720p often manages only 10 or 15), else the slowest above.
    var defaultInterval: V4L2Fraction? {
        if let thirty = offers(framesPerSecond: 30) { return thirty }
        switch self {
        case .discrete(let list):
            let below = list.filter { $0.framesPerSecond <= 30 }
            if let best = below.max(by: { $0.framesPerSecond < $1.framesPerSecond }) { return best }
            return list.min { $0.framesPerSecond < $1.framesPerSecond }
        case .range(let shortest, let longest):
            return shortest.framesPerSecond < 30 ? shortest : longest
        case .unknown:
            return nil
        }
    }

    /// "1, 2, 5, 10, 15, 30 fps" or "1–60 fps".
    public var description: String {
        switch self {
        case .discrete(let list):
            let rates = list.sorted { $0.framesPerSecond < $1.framesPerSecond }.map(\.description)
            return rates.joined(separator: ", ") + " fps"
        case .range(let shortest, let longest):
            return "\(longest)–\(shortest) fps"
        case .unknown:
            return "rates not listed by the driver"
        }
    }
}

/// One size a format offers, with its frame rates.
public struct V4L2SizeOffer: Sendable, Equatable {
    public var size: FrameSize
    public var intervals: V4L2FrameIntervals

    public init(size: FrameSize, intervals: V4L2FrameIntervals) {
        self.size = size
        self.intervals = intervals
    }
}

/// The sizes a format offers.
public enum V4L2FrameSizes: Sendable, Equatable {
    case discrete([V4L2SizeOffer])
    /// Any size from `minimum` to `maximum` in steps (stepwise or continuous).
    case range(minimum: FrameSize, maximum: FrameSize, stepWidth: Int, stepHeight: Int)
    /// The driver does not enumerate sizes; `VIDIOC_S_FMT` will say what it does.
    case unknown

    func offer(for size: FrameSize) -> V4L2SizeOffer? {
        switch self {
        case .discrete(let list):
            return list.first { $0.size == size }
        case .range(let minimum, let maximum, let sw, let sh):
            guard (minimum.width...maximum.width).contains(size.width),
                  (minimum.height...maximum.height).contains(size.height),
                  (size.width - minimum.width) % max(sw, 1) == 0,
                  (size.height - minimum.height) % max(sh, 1) == 0 else { return nil }
            return V4L2SizeOffer(size: size, intervals: .unknown)
        case .unknown:
            return V4L2SizeOffer(size: size, intervals: .unknown)
        }
    }

    public var description: String {
        switch self {
        case .discrete(let list): return list.map(\.size.description).joined(separator: ", ")
        case .range(let minimum, let maximum, _, _): return "\(minimum) to \(maximum)"
        case .unknown: return "sizes not listed by the driver"
        }
    }
}

/// One pixel format a capture node offers, with everything `VIDIOC_ENUM_*` says about it.
public struct V4L2FormatOffer: Sendable, Equatable {
    public var pixelFormat: V4L2PixelFormat
    /// The driver's own name for it ("YUYV 4:2:2").
    public var name: String
    public var isCompressed: Bool
    /// Emulated by libv4l or the driver rather than native to the hardware.
    public var isEmulated: Bool
    public var sizes: V4L2FrameSizes

    public init(pixelFormat: V4L2PixelFormat, name: String = "", isCompressed: Bool = false, isEmulated: Bool = false,
                sizes: V4L2FrameSizes) {
        self.pixelFormat = pixelFormat
        self.name = name
        self.isCompressed = isCompressed
        self.isEmulated = isEmulated
        self.sizes = sizes
    }
}

/// Reads a node's formats, sizes and frame intervals.
enum V4L2FormatCatalog {
    /// Throws only when the device is gone (ENODEV): an empty list must not pass for a camera with no formats.
    static func formats(of device: V4L2Device, bufferType: v4l2_buf_type) throws(V4L2IoctlError) -> [V4L2FormatOffer] {
        var offers: [V4L2FormatOffer] = []
        for index in 0..<UInt32(256) {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = bufferType.rawValue
            // EINVAL marks the end of the list; any other error ends it too, but for a device that is gone.
            do {
                try device.ioctl(.enumerateFormats, &desc)
            } catch where error.errno.rawValue == ENODEV {
                throw error
            } catch {
                break
            }
            let format = V4L2PixelFormat(rawValue: desc.pixelformat)
            offers.append(V4L2FormatOffer(
                pixelFormat: format, name: String(cArray: desc.description),
                isCompressed: desc.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0,
                isEmulated: desc.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0,
                sizes: sizes(of: device, format: format)))
        }
        return offers
    }

    static func sizes(of device: V4L2Device, format: V4L2PixelFormat) -> V4L2FrameSizes {
        var list: [V4L2SizeOffer] = []
        for index in 0..<UInt32(1024) {
            var e = v4l2_frmsizeenum()
            e.index = index
            e.pixel_format = format.rawValue
            guard (try? device.ioctl(.enumerateFrameSizes, &e)) != nil else { break }
            if e.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                let size = FrameSize(width: Int(e.discrete.width), height: Int(e.discrete.height))
                list.append(V4L2SizeOffer(size: size, intervals: intervals(of: device, format: format, size: size)))
            } else {
                let s = e.stepwise
                return .range(minimum: FrameSize(width: Int(s.min_width), height: Int(s.min_height)),
                              maximum: FrameSize(width: Int(s.max_width), height: Int(s.max_height)),
                              stepWidth: Int(s.step_width), stepHeight: Int(s.step_height))
            }
        }
        return list.isEmpty ? .unknown : .discrete(list)
    }

    static func intervals(of device: V4L2Device, format: V4L2PixelFormat, size: FrameSize) -> V4L2FrameIntervals {
        var list: [V4L2Fraction] = []
        for index in 0..<UInt32(256) {
            var e = v4l2_frmivalenum()
            e.index = index
            e.pixel_format = format.rawValue
            e.width = UInt32(size.width)
            e.height = UInt32(size.height)
            guard (try? device.ioctl(.enumerateFrameIntervals, &e)) != nil else { break }
            if e.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                list.append(V4L2Fraction(numerator: e.discrete.numerator, denominator: e.discrete.denominator))
            } else {
                let s = e.stepwise
                return .range(shortest: V4L2Fraction(numerator: s.min.numerator, denominator: s.min.denominator),
                              longest: V4L2Fraction(numerator: s.max.numerator, denominator: s.max.denominator))
            }
        }
        return list.isEmpty ? .unknown : .discrete(list)
    }
}
