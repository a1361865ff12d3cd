import SystemSupport
import Glibc

/// Who made the GPU behind a render node, from its PCI vendor ID in sysfs. It decides which
/// hint a failure gets: an Intel package is no help on an NVIDIA card.
public enum GPUVendor: Equatable, Sendable {
    case intel, amd, nvidia
    /// A virtual GPU (virtio-gpu): VA-API encoding only if the host passes video through.
    case virtio
    case otherPCI(UInt16)
    /// No PCI device behind the node: vgem, a platform GPU, or sysfs not readable.
    case notPCI

    public init(pciVendorID: UInt16) {
        switch pciVendorID {
        case 0x8086: self = .intel
        case 0x1002, 0x1022: self = .amd
        case 0x10de: self = .nvidia
        case 0x1af4: self = .virtio
        default: self = .otherPCI(pciVendorID)
        }
    }

    /// Parses sysfs's `vendor` file ("0x10de\n").
    init(sysfsVendor text: String) {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.hasPrefix("0x"), let id = UInt16(trimmed.dropFirst(2), radix: 16) else {
            self = .notPCI
            return
        }
        self.init(pciVendorID: id)
    }

    public var name: String? {
        switch self {
        case .intel: "Intel GPU"
        case .amd: "AMD GPU"
        case .nvidia: "NVIDIA GPU"
        case .virtio: "virtio virtual GPU"
        case .otherPCI(let id): "PCI vendor 0x" + String(id, radix: 16, uppercase: false)
        case .notPCI: nil
        }
    }

    /// What to install or do when the VA driver does not load for this GPU.
    public var hintWhenTheDriverFails: String {
        switch self {
        case .intel: "is Intel's VA driver installed? intel-media-va-driver-non-free (Broadwell and newer) "
            + "or i965-va-driver (older GPUs); `vainfo` shows what libva finds"
        case .amd: "is mesa-va-drivers installed? `vainfo` shows what libva finds"
        case .nvidia: "NVIDIA's VA-API driver (nvidia-vaapi-driver) only decodes, and camrec has no NVENC "
            + "backend: use --encoder software"
        case .virtio: "a virtual GPU encodes through VA-API only when the host passes video encoding through "
            + "(virgl with mesa-va-drivers); otherwise use --encoder software"
        case .otherPCI, .notPCI: "is the VA driver for this GPU installed (intel-media-va-driver-non-free or "
            + "i965-va-driver for Intel, mesa-va-drivers for AMD)? `vainfo` shows what libva finds"
        }
    }

    /// What to do when the driver loads but offers no H.264 encoder.
    public var hintWhenThereIsNoEncoder: String {
        switch self {
        case .intel: "this Intel GPU's driver has no H.264 encoder: try intel-media-va-driver-non-free "
            + "(the free package lacks some encoders), or --encoder software"
        case .amd: "this AMD GPU's driver has no H.264 encoder (Debian's mesa-va-drivers may be built "
            + "without it): use --encoder software"
        case .nvidia: "NVIDIA's VA-API driver only decodes and camrec has no NVENC backend: use --encoder software"
        case .virtio, .otherPCI, .notPCI: "use --encoder software"
        }
    }
}

/// A DRM render node (`/dev/dri/renderD128`) and the GPU behind it.
public struct RenderNode: Equatable, Sendable {
    public var path: String
    public var vendor: GPUVendor

    public init(path: String, vendor: GPUVendor) {
        self.path = path
        self.vendor = vendor
    }

    /// Every render node under `directory`, in number order (renderD128 first): the order to try them.
    public static func all(directory: String = "/dev/dri", sysfs: String = "/sys/class/drm") -> [RenderNode] {
        let numbers = SystemFiles.entries(of: directory).compactMap { name -> Int? in
            guard name.hasPrefix("renderD"), let n = Int(name.dropFirst("renderD".count)), n >= 0 else { return nil }
            return n
        }
        return numbers.sorted().map { n in
            RenderNode(path: "\(directory)/renderD\(n)", vendor: vendor(ofNodeNamed: "renderD\(n)", sysfs: sysfs))
        }
    }

    /// The vendor of the node at `path`, looked up by its name under `sysfs`.
    public static func vendor(of path: String, sysfs: String = "/sys/class/drm") -> GPUVendor {
        vendor(ofNodeNamed: path.split(separator: "/").last.map(String.init) ?? path, sysfs: sysfs)
    }

    private static func vendor(ofNodeNamed name: String, sysfs: String) -> GPUVendor {
        // A few bytes ("0x8086\n"); anything longer is not a vendor ID.
        guard let text = SystemFiles.text(of: "\(sysfs)/\(name)/device/vendor", limit: 33), text.utf8.count <= 32 else { return .notPCI }
        return GPUVendor(sysfsVendor: text)
    }

    /// "renderD128 (NVIDIA GPU)", or the path alone when the vendor is unknown.
    public var description: String {
        vendor.name.map { "\(path) (\($0))" } ?? path
    }
}
