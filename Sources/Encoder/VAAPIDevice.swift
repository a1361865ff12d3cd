import Bitstream
import CFFmpeg
import Libav
import Glibc

/// What a VA driver offers for H.264 and H.265, as `camrec encoders` shows it.
public struct VAAPICapabilities: Sendable {
    public struct Profile: Sendable {
        /// libva's name, e.g. "VAProfileH264ConstrainedBaseline".
        public var name: String
        /// camrec's name for it, when camrec can ask for it.
        public var camrecProfile: H264Profile?
        /// libva's entrypoint names, e.g. ["VAEntrypointVLD", "VAEntrypointEncSlice"].
        public var entrypoints: [String]
        public var canEncode: Bool
        public var canEncodeLowPower: Bool
        var vaProfile: VAProfile
    }

    /// The driver's vendor string (vaQueryVendorString).
    public var vendor: String
    /// Every H.264 profile the driver lists, with its entrypoints.
    public var h264: [Profile]
    /// Every H.265 profile the driver lists (Main, Main 10, …), with its entrypoints.
    public var hevc: [Profile]

    public func profiles(_ codec: VideoCodec) -> [Profile] { codec == .h264 ? h264 : hevc }

    /// An encode entrypoint exists for some profile of the codec.
    public func canEncode(_ codec: VideoCodec) -> Bool { profiles(codec).contains { $0.canEncode || $0.canEncodeLowPower } }
}

/// An open VA-API device: libavutil's VAAPI device context (a VADisplay with the driver
/// initialised) and what its driver can do.
///
/// `device` is a DRM render node (`/dev/dri/renderD128`) — what users pass — or, for
/// testing on machines without a GPU, an X11 display name starting with ':' (`:99` under
/// Xvfb): libva's DRM path only accepts real DRM nodes, its X11 path works with any X server.
public final class VAAPIDevice: Sendable {
    public let device: String
    public let capabilities: VAAPICapabilities
    /// The C handles as addresses, a plain value like a file descriptor: set in `init`, never changed.
    /// libva locks its display itself, and libavutil counts the device's references atomically.
    private let deviceAddress: UInt
    private let displayAddress: UInt
    var deviceRef: UnsafeMutablePointer<AVBufferRef> { UnsafeMutablePointer(bitPattern: deviceAddress)! }
    var display: VADisplay { UnsafeMutableRawPointer(bitPattern: displayAddress)! }

    private init(device: String, deviceRef: UnsafeMutablePointer<AVBufferRef>, display: VADisplay,
                 capabilities: VAAPICapabilities) {
        self.device = device
        deviceAddress = UInt(bitPattern: deviceRef)
        displayAddress = UInt(bitPattern: display)
        self.capabilities = capabilities
    }

    deinit {
        var ref: UnsafeMutablePointer<AVBufferRef>? = deviceRef
        av_buffer_unref(&ref)
    }

    /// The first render node under /dev/dri (renderD128, renderD129, …), or nil.
    public static func defaultRenderNode(directory: String = "/dev/dri") -> String? {
        RenderNode.all(directory: directory).first?.path
    }

    /// Opens `device` (nil: the first render node) and checks that its driver can encode `codec`
    /// (nil: no check). Every failure is an `.unavailable` EncoderError whose message says why, in one line.
    public static func open(_ device: String?, requireEncoding codec: VideoCodec? = .h264) throws -> VAAPIDevice {
        let opened = try openWithoutChecks(device)
        if let codec, !opened.capabilities.canEncode(codec) {
            let caps = opened.capabilities
            let profiles = caps.profiles(codec)
            let listed = profiles.isEmpty ? "no \(codec.displayName) profiles at all"
                : profiles.map { "\(shortName($0.name)): \($0.entrypoints.map(shortName).joined(separator: ", "))" }
                    .joined(separator: "; ")
            let hint = opened.device.hasPrefix(":") ? "" : "; " + RenderNode.vendor(of: opened.device).hintWhenThereIsNoEncoder
            throw EncoderError(.unavailable, "the VA driver on \(opened.device) (\(caps.vendor)) has no \(codec.displayName) encode "
                + "entrypoint (\(listed)): this GPU or driver can't encode \(codec.displayName) through VA-API\(hint)")
        }
        return opened
    }

    static func openWithoutChecks(_ device: String?) throws -> VAAPIDevice {
        guard let device = device ?? defaultRenderNode() else {
            throw EncoderError(.unavailable, "no GPU render node: /dev/dri has no renderD* device "
                + "(no GPU, or its kernel driver is not loaded)")
        }
        let isX11 = device.hasPrefix(":")
        if !isX11 {
            try rejectPrimaryNode(device)
            try checkNode(device)
        }
        // libva is opened on first use (Sources/CFFmpeg/LazyLibav.c): missing, it is the one line naming its package.
        if let failure = LazyLibrary.loadFailure({ camrec_libva_try_load($0, $1) == 0 }) {
            throw EncoderError(.unavailable, failure)
        }
        LibavLogCapture.begin()
        var ref: UnsafeMutablePointer<AVBufferRef>?
        let status = av_hwdevice_ctx_create(&ref, AV_HWDEVICE_TYPE_VAAPI, device, nil, 0)
        let detail = LibavLogCapture.takeLastError()
        guard status >= 0, let ref else {
            let why = detail.map { ": \($0)" } ?? ""
            if isX11 {
                if status == camrec_averror(EIO) {
                    throw EncoderError(.unavailable, "the VA driver failed to load or initialise on X11 display \(device)\(why)\(driverHint(device))")
                }
                throw EncoderError(.unavailable, "cannot use X11 display \(device) for VA-API (an X11 display is for "
                    + "testing only; is an X server running there?)\(why)")
            }
            if status == camrec_averror(EIO) {
                throw EncoderError(.unavailable, "the VA driver failed to load or initialise on \(device)\(why)\(driverHint(device))")
            }
            throw EncoderError(.unavailable, "\(device) is not a usable VA-API device (not a GPU render node?)\(why)")
        }
        let hwDevice = UnsafeMutableRawPointer(ref.pointee.data)!.assumingMemoryBound(to: AVHWDeviceContext.self)
        let vaContext = hwDevice.pointee.hwctx.assumingMemoryBound(to: AVVAAPIDeviceContext.self)
        guard let display = vaContext.pointee.display else {
            var r: UnsafeMutablePointer<AVBufferRef>? = ref
            av_buffer_unref(&r)
            throw EncoderError(.unavailable, "libva gave no display for \(device)")
        }
        let capabilities = queryCapabilities(display)
        return VAAPIDevice(device: device, deviceRef: ref, display: display, capabilities: capabilities)
    }

    /// `/dev/dri/cardN` is a primary node: opening it for VA-API needs DRM authentication (a display
    /// server's job), and libva would fail with an unhelpful message. Name the render node instead.
    static func rejectPrimaryNode(_ path: String, directory: String = "/dev/dri") throws {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard name.hasPrefix("card"), Int(name.dropFirst("card".count)) != nil else { return }
        let parent = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let render = defaultRenderNode(directory: parent.isEmpty ? directory : parent)
        throw EncoderError(.unavailable, "\(path) is a primary DRM node (it needs DRM authentication): use a render node, "
            + (render.map { "--vaapi-device \($0)" } ?? "/dev/dri/renderD128 or the like (this machine has none)"))
    }

    /// libva's DRM path says only "no VA display" when it can't open the node; find out why first.
    private static func checkNode(_ path: String) throws {
        var info = stat()
        if stat(path, &info) != 0 {
            let err = errno
            if err == ENOENT {
                throw EncoderError(.unavailable, "no render node at \(path) "
                    + (defaultRenderNode().map { "(this machine has \($0))" } ?? "(/dev/dri has no render node: no GPU, or its kernel driver is not loaded)"))
            }
            throw EncoderError(.unavailable, "cannot use \(path): \(String(cString: strerror(err)))")
        }
        if info.st_mode & S_IFMT != S_IFCHR {
            throw EncoderError(.unavailable, "\(path) is not a GPU render node (not a character device)")
        }
        // DRM devices (cardN, renderDN) have major number 226 on Linux.
        if (info.st_rdev >> 8) & 0xfff != 226 {
            throw EncoderError(.unavailable, "\(path) is not a GPU render node (not a DRM device)")
        }
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        if fd < 0 {
            let err = errno
            if err == EACCES || err == EPERM {
                let group = getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } ?? "render"
                throw EncoderError(.unavailable, "permission denied on \(path): join the '\(group)' group that owns it "
                    + "(sudo usermod -aG \(group) $USER, then log in again)")
            }
            throw EncoderError(.unavailable, "cannot open \(path): \(String(cString: strerror(err)))")
        }
        close(fd)
    }

    private static func driverHint(_ device: String) -> String {
        if let name = getenv("LIBVA_DRIVER_NAME").map({ String(cString: $0) }) {
            let path = getenv("LIBVA_DRIVERS_PATH").map { ", LIBVA_DRIVERS_PATH=\(String(cString: $0))" } ?? ""
            return " (LIBVA_DRIVER_NAME=\(name)\(path) chose the driver; `vainfo` shows what libva finds)"
        }
        let vendor = device.hasPrefix(":") ? GPUVendor.notPCI : RenderNode.vendor(of: device)
        return " (\(vendor.name.map { "\($0): " } ?? "")\(vendor.hintWhenTheDriverFails))"
    }

    private static func queryCapabilities(_ display: VADisplay) -> VAAPICapabilities {
        let vendor = vaQueryVendorString(display).map { String(cString: $0) } ?? "unknown driver"
        var profiles = [VAProfile](repeating: VAProfileNone, count: Int(max(1, vaMaxNumProfiles(display))))
        var profileCount: Int32 = 0
        if vaQueryConfigProfiles(display, &profiles, &profileCount) != camrec_VA_STATUS_SUCCESS { profileCount = 0 }
        var h264: [VAAPICapabilities.Profile] = []
        var hevc: [VAAPICapabilities.Profile] = []
        var entrypoints = [VAEntrypoint](repeating: VAEntrypoint(rawValue: 0), count: Int(max(1, vaMaxNumEntrypoints(display))))
        for profile in profiles.prefix(Int(profileCount)) {
            let name = String(cString: vaProfileStr(profile))
            let isHEVC = name.hasPrefix("VAProfileHEVC")
            guard name.hasPrefix("VAProfileH264") || isHEVC else { continue }
            var count: Int32 = 0
            if vaQueryConfigEntrypoints(display, profile, &entrypoints, &count) != camrec_VA_STATUS_SUCCESS { count = 0 }
            let eps = Array(entrypoints.prefix(Int(count)))
            let camrecProfile: H264Profile? = switch profile {
            case VAProfileH264ConstrainedBaseline: .baseline
            case VAProfileH264Main: .main
            case VAProfileH264High: .high
            default: nil
            }
            let described = VAAPICapabilities.Profile(name: name, camrecProfile: camrecProfile,
                                                      entrypoints: eps.map { String(cString: vaEntrypointStr($0)) },
                                                      canEncode: eps.contains(VAEntrypointEncSlice),
                                                      canEncodeLowPower: eps.contains(VAEntrypointEncSliceLP),
                                                      vaProfile: profile)
            if isHEVC { hevc.append(described) } else { h264.append(described) }
        }
        return VAAPICapabilities(vendor: vendor, h264: h264, hevc: hevc)
    }

    /// The rate-control modes (VA_RC_* bits) the driver offers for a profile and entrypoint.
    func rateControlModes(profile: VAProfile, lowPower: Bool) -> UInt32 {
        var attribute = VAConfigAttrib(type: VAConfigAttribRateControl, value: 0)
        let status = vaGetConfigAttributes(display, profile, lowPower ? VAEntrypointEncSliceLP : VAEntrypointEncSlice,
                                           &attribute, 1)
        guard status == camrec_VA_STATUS_SUCCESS, attribute.value != camrec_VA_ATTRIB_NOT_SUPPORTED else { return 0 }
        return attribute.value
    }

    /// "VAProfileH264High" → "H264High", "VAEntrypointEncSlice" → "EncSlice".
    static func shortName(_ name: String) -> String {
        for prefix in ["VAProfile", "VAEntrypoint"] where name.hasPrefix(prefix) {
            return String(name.dropFirst(prefix.count))
        }
        return name
    }
}

