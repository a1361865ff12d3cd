import Encoder
import Foundation
import Glibc
import XCTest

/// Render nodes in the order to try them, and the vendor that decides each failure's hint,
/// read from a directory laid out as /dev/dri and /sys/class/drm are (no GPU here: the real
/// nodes are met in the VM, Tests/vm-cases/vaapi-vm.sh).
final class RenderNodeTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/camrec-rendernode.XXXXXX".utf8CString)
        root = try XCTUnwrap(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        for dir in ["dev", "sys"] { mkdir("\(root)/\(dir)", 0o755) }
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func touch(_ path: String, _ text: String = "") {
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        _ = text.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    private func sysfsNode(_ name: String, vendor: String?) {
        mkdir("\(root)/sys/\(name)", 0o755)
        mkdir("\(root)/sys/\(name)/device", 0o755)
        if let vendor { touch("\(root)/sys/\(name)/device/vendor", vendor) }
    }

    func testNodesComeInNumberOrderWithTheirVendors() {
        for name in ["renderD130", "card0", "renderD128", "renderD129", "renderDx", "card1"] {
            touch("\(root)/dev/\(name)")
        }
        sysfsNode("renderD128", vendor: "0x10de\n")   // NVIDIA first, as on many hybrid laptops
        sysfsNode("renderD129", vendor: "0x8086\n")
        sysfsNode("renderD130", vendor: nil)          // vgem: a platform device, no PCI vendor
        let nodes = RenderNode.all(directory: "\(root)/dev", sysfs: "\(root)/sys")
        XCTAssertEqual(nodes.map(\.path), ["renderD128", "renderD129", "renderD130"].map { "\(root)/dev/\($0)" })
        XCTAssertEqual(nodes.map(\.vendor), [.nvidia, .intel, .notPCI])
        XCTAssertEqual(nodes[0].description, "\(root)/dev/renderD128 (NVIDIA GPU)")
        XCTAssertEqual(nodes[2].description, "\(root)/dev/renderD130")
    }

    func testVendorFilesThatAreNotAVendorID() {
        touch("\(root)/dev/renderD128")
        for junk in ["", "0x", "0xzzzz", "8086", "0x123456789", String(repeating: "0", count: 4096)] {
            sysfsNode("renderD128", vendor: junk)
            XCTAssertEqual(RenderNode.vendor(of: "\(root)/dev/renderD128", sysfs: "\(root)/sys"), .notPCI, "\(junk.prefix(12))")
        }
        sysfsNode("renderD128", vendor: "0x1002\n")
        XCTAssertEqual(RenderNode.vendor(of: "/dev/dri/renderD128", sysfs: "\(root)/sys"), .amd)
        XCTAssertEqual(RenderNode.all(directory: "\(root)/missing", sysfs: "\(root)/sys"), [])
    }

    func testEachVendorIsNamedAndNoHintSuggestsAnotherVendorsPackages() {
        XCTAssertEqual(GPUVendor(pciVendorID: 0x8086), .intel)
        XCTAssertEqual(GPUVendor(pciVendorID: 0x1002), .amd)
        XCTAssertEqual(GPUVendor(pciVendorID: 0x10de), .nvidia)
        XCTAssertEqual(GPUVendor(pciVendorID: 0x1af4), .virtio)
        XCTAssertEqual(GPUVendor(pciVendorID: 0x1234), .otherPCI(0x1234))
        XCTAssertEqual(GPUVendor.otherPCI(0x1234).name, "PCI vendor 0x1234")
        let intelPackages = ["intel-media", "i965"], amdPackages = ["mesa-va-drivers"]
        for hint in [GPUVendor.nvidia.hintWhenTheDriverFails, GPUVendor.nvidia.hintWhenThereIsNoEncoder] {
            XCTAssertTrue(hint.contains("--encoder software"), hint)
            for package in intelPackages + amdPackages { XCTAssertFalse(hint.contains(package), hint) }
        }
        for hint in [GPUVendor.amd.hintWhenTheDriverFails, GPUVendor.amd.hintWhenThereIsNoEncoder] {
            for package in intelPackages { XCTAssertFalse(hint.contains(package), hint) }
        }
        XCTAssertTrue(GPUVendor.amd.hintWhenTheDriverFails.contains("mesa-va-drivers"))
        for hint in [GPUVendor.intel.hintWhenTheDriverFails, GPUVendor.intel.hintWhenThereIsNoEncoder] {
            for package in amdPackages { XCTAssertFalse(hint.contains(package), hint) }
        }
        XCTAssertTrue(GPUVendor.intel.hintWhenTheDriverFails.contains("intel-media-va-driver-non-free"))
    }
}
