@testable import Capture
import Frames
import Foundation
import XCTest

/// Cameras in a sysfs tree laid out as the kernel lays out UVC cameras (class link → USB interface →
/// USB device with idVendor, idProduct and serial), in a temporary directory.
final class CameraIdentityTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "camrec-sysfs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/class/video4linux", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// `videoN` of a USB camera at `port`, its `index`-th node; `serial` nil for a camera without one.
    private func plug(_ node: String, port: String, vendor: String = "046d", product: String = "0825",
                      serial: String?, index: Int = 0) throws {
        try plugUSBCamera(sysfs: root, node: node, port: port, vendor: vendor, product: product, serial: serial, index: index)
    }

    private func unplug(_ node: String, port: String) throws {
        try FileManager.default.removeItem(atPath: "\(root)/class/video4linux/\(node)")
        try FileManager.default.removeItem(atPath: "\(root)/devices/pci0000:00/0000:00:14.0/usb1/\(port)")
    }

    private func identity(_ node: String, bus: String = "usb-0000:00:14.0") -> CameraIdentity {
        CameraIdentity.of(node: "/dev/\(node)", busInfo: bus, sysfs: root)
    }

    func testACameraWithASerialIsTheSameOnAnyPortAndUnderAnyNumber() throws {
        try plug("video0", port: "1-1.2", serial: "8A3C1F2E")
        let before = identity("video0")
        XCTAssertEqual(before, CameraIdentity(vendorProduct: "046d:0825", serial: "8A3C1F2E", portPath: "1-1.2",
                                              busInfo: "usb-0000:00:14.0", nodeIndex: 0))
        try unplug("video0", port: "1-1.2")
        try plug("video2", port: "1-1.3", serial: "8A3C1F2E")            // back, elsewhere
        try plug("video0", port: "1-1.2", serial: "55550000")            // another camera of the same model took its place
        XCTAssertTrue(before.isSameCamera(as: identity("video2")))
        XCTAssertFalse(before.isSameCamera(as: identity("video0")), "never whatever now holds the old number")
        XCTAssertTrue(before.matchedBy.contains("serial 8A3C1F2E"), before.matchedBy)
    }

    func testACameraWithoutASerialIsKnownByItsPortAndSaysSo() throws {
        try plug("video0", port: "1-1.2", serial: nil)
        let before = identity("video0")
        XCTAssertNil(before.serial)
        try unplug("video0", port: "1-1.2")
        try plug("video4", port: "1-1.2", serial: nil)
        try plug("video6", port: "1-1.4", serial: nil)
        XCTAssertTrue(before.isSameCamera(as: identity("video4")), "same model, same port")
        XCTAssertFalse(before.isSameCamera(as: identity("video6")), "same model on another port: not known to be it")
        XCTAssertTrue(before.matchedBy.contains("no serial"), before.matchedBy)
    }

    func testTheSecondNodeOfACameraIsNotItsFirst() throws {
        try plug("video0", port: "1-1.2", serial: "AB", index: 0)
        try plug("video1", port: "1-1.2", serial: "AB", index: 1)
        XCTAssertFalse(identity("video0").isSameCamera(as: identity("video1")))
        XCTAssertTrue(identity("video1").isSameCamera(as: identity("video1")))
    }

    func testANodeOffUSBIsKnownByItsBusInfo() throws {
        // vivid: a platform device; no USB parent in sysfs.
        let dir = "\(root)/devices/platform/vivid.0/video4linux/video3"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "0\n".write(toFile: "\(dir)/index", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/device", withDestinationPath: "\(root)/devices/platform/vivid.0")
        try FileManager.default.createSymbolicLink(atPath: "\(root)/class/video4linux/video3", withDestinationPath: dir)
        let vivid = identity("video3", bus: "platform:vivid-000")
        XCTAssertNil(vivid.vendorProduct)
        XCTAssertTrue(vivid.isSameCamera(as: identity("video3", bus: "platform:vivid-000")))
        XCTAssertFalse(vivid.isSameCamera(as: identity("video3", bus: "platform:vivid-001")))
        XCTAssertTrue(vivid.matchedBy.contains("bus info platform:vivid-000"), vivid.matchedBy)
    }
}

/// `CameraReturnWatcher` over the same kind of sysfs tree, with a fake /dev and the mock camera: the lost
/// camera back under another number on another port is found; the same model with another serial on
/// the lost camera's own port is never opened.
final class CameraReturnWatcherTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "camrec-return-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/class/video4linux", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/dev", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func plug(_ node: String, port: String, serial: String) throws {
        try plugUSBCamera(sysfs: root, node: node, port: port, serial: serial)
        _ = FileManager.default.createFile(atPath: "\(root)/dev/\(node)", contents: nil)
    }

    /// The camera that was lost: serial A, last seen at port 1-1.
    private let lost = CameraIdentity(vendorProduct: "046d:0825", serial: "A", portPath: "1-1", busInfo: "usb-0000:00:14.0-1", nodeIndex: 0)

    private func watcher(_ camera: MockCamera, timeout: Double) -> CameraReturnWatcher {
        CameraReturnWatcher(identity: lost, size: FrameSize(width: camera.width, height: camera.height), framesPerSecond: 30,
                            pixelFormat: camera.pixelFormat, timeoutSeconds: timeout, recordPriority: true, system: camera,
                            devices: root + "/dev", sysfs: root, log: { _ in })
    }

    func testTheSameCameraUnderAnotherNumberIsFoundAndTheImpostorOnItsPortIsNeverOpened() throws {
        try plug("video3", port: "1-1", serial: "B")   // the same model, another serial, on the lost camera's port
        try plug("video5", port: "1-2", serial: "A")   // the lost camera, on another port, under another number
        let camera = MockCamera(script: [])
        camera.nodes = ["\(root)/dev/video3", "\(root)/dev/video5"]
        let outcome = watcher(camera, timeout: 5).waitForReturn(of: TestPatternSource(size: FrameSize(width: 4, height: 2), fps: 30))
        guard case .returned(let source) = outcome else { return XCTFail("not found: \(outcome)") }
        XCTAssertEqual((source as? V4L2CaptureSource)?.path, "\(root)/dev/video5")
        XCTAssertFalse(camera.openedPaths.contains("\(root)/dev/video3"), "the impostor was opened: \(camera.openedPaths)")
    }

    func testWithOnlyTheImpostorThereTheWaitRunsOut() throws {
        try plug("video3", port: "1-1", serial: "B")
        let camera = MockCamera(script: [])
        camera.nodes = ["\(root)/dev/video3"]
        let started = Date()
        let outcome = watcher(camera, timeout: 0.5).waitForReturn(of: TestPatternSource(size: FrameSize(width: 4, height: 2), fps: 30))
        guard case .timedOut = outcome else { return XCTFail("expected a timeout: \(outcome)") }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        XCTAssertEqual(camera.openedPaths, [], "nothing opened")
    }
}

/// `videoN` of a USB camera at `port` in a sysfs tree at `sysfs`, laid out as the kernel lays out UVC
/// cameras; `serial` nil for a camera without one.
func plugUSBCamera(sysfs root: String, node: String, port: String, vendor: String = "046d", product: String = "0825",
                   serial: String?, index: Int = 0) throws {
    let usb = "\(root)/devices/pci0000:00/0000:00:14.0/usb1/\(port)"
    let interface = "\(usb)/\(port):1.0"
    let classDir = "\(interface)/video4linux/\(node)"
    let fm = FileManager.default
    try fm.createDirectory(atPath: classDir, withIntermediateDirectories: true)
    try "\(vendor)\n".write(toFile: "\(usb)/idVendor", atomically: true, encoding: .utf8)
    try "\(product)\n".write(toFile: "\(usb)/idProduct", atomically: true, encoding: .utf8)
    if let serial { try "\(serial)\n".write(toFile: "\(usb)/serial", atomically: true, encoding: .utf8) }
    try "\(index)\n".write(toFile: "\(classDir)/index", atomically: true, encoding: .utf8)
    try fm.createSymbolicLink(atPath: "\(classDir)/device", withDestinationPath: interface)
    try fm.createSymbolicLink(atPath: "\(root)/class/video4linux/\(node)", withDestinationPath: classDir)
}
