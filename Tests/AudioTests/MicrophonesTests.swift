import Foundation
import XCTest

@testable import Audio

/// `--audio camera` and `camrec devices` against a sysfs laid out as the kernel lays out a USB webcam
/// (one USB device, a video interface and an audio interface) beside a loopback card that is on no bus.
final class MicrophonesTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "camrec-sysfs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fm = FileManager.default
        let usb = root + "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2"
        for dir in [usb + "/1-2:1.0/video4linux/video0", usb + "/1-2:1.2/sound/card1", root + "/sys/devices/platform/snd_aloop.0/sound/card0",
                    root + "/sys/devices/platform/vivid.0/video4linux/video2", root + "/sys/class/sound", root + "/sys/class/video4linux",
                    root + "/proc/asound", root + "/dev"] {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        try "046d\n".write(toFile: usb + "/idVendor", atomically: true, encoding: .utf8)
        try "1\n".write(toFile: usb + "/busnum", atomically: true, encoding: .utf8)
        try "C920\n".write(toFile: usb + "/1-2:1.2/sound/card1/id", atomically: true, encoding: .utf8)
        try "Loopback\n".write(toFile: root + "/sys/devices/platform/snd_aloop.0/sound/card0/id", atomically: true, encoding: .utf8)
        let links = [
            ("sys/class/sound/card1", usb + "/1-2:1.2/sound/card1"),
            ("sys/class/sound/pcmC1D0c", usb + "/1-2:1.2/sound/card1"),
            ("sys/class/sound/card0", root + "/sys/devices/platform/snd_aloop.0/sound/card0"),
            ("sys/class/sound/pcmC0D0c", root + "/sys/devices/platform/snd_aloop.0/sound/card0"),
            ("sys/class/sound/pcmC0D0p", root + "/sys/devices/platform/snd_aloop.0/sound/card0"),
            ("sys/class/sound/pcmC0D1c", root + "/sys/devices/platform/snd_aloop.0/sound/card0"),
            ("sys/class/video4linux/video0", usb + "/1-2:1.0/video4linux/video0"),
            ("sys/class/video4linux/video2", root + "/sys/devices/platform/vivid.0/video4linux/video2"),
        ]
        for (link, target) in links { try fm.createSymbolicLink(atPath: root + "/" + link, withDestinationPath: target) }
        // Each class entry's `device` is its parent device: the USB interface, or the platform device.
        try fm.createSymbolicLink(atPath: usb + "/1-2:1.2/sound/card1/device", withDestinationPath: usb + "/1-2:1.2")
        try fm.createSymbolicLink(atPath: root + "/sys/devices/platform/snd_aloop.0/sound/card0/device",
                                  withDestinationPath: root + "/sys/devices/platform/snd_aloop.0")
        try fm.createSymbolicLink(atPath: usb + "/1-2:1.0/video4linux/video0/device", withDestinationPath: usb + "/1-2:1.0")
        try fm.createSymbolicLink(atPath: root + "/sys/devices/platform/vivid.0/video4linux/video2/device",
                                  withDestinationPath: root + "/sys/devices/platform/vivid.0")
        try " 0 [Loopback       ]: Loopback - Loopback\n                      Loopback 1\n 1 [C920           ]: USB-Audio - HD Pro Webcam C920\n                      HD Pro Webcam C920 at usb-0000:00:14.0-2, high speed\n"
            .write(toFile: root + "/proc/asound/cards", atomically: true, encoding: .utf8)
        // A camera named by a link, as /dev/v4l/by-id/... are.
        XCTAssertTrue(FileManager.default.createFile(atPath: root + "/dev/video0", contents: nil))
        try fm.createSymbolicLink(atPath: root + "/dev/webcam", withDestinationPath: root + "/dev/video0")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: root)
    }

    func testEveryCaptureDeviceIsListedByTheNameAudioTakes() {
        let all = Microphones.all(sysfs: root + "/sys", procfs: root + "/proc")
        XCTAssertEqual(all.map(\.alsaName), ["hw:CARD=Loopback,DEV=0", "hw:CARD=Loopback,DEV=1", "hw:CARD=C920,DEV=0"])
        XCTAssertEqual(all.map(\.name), ["Loopback", "Loopback", "HD Pro Webcam C920"])
        XCTAssertNil(all[0].usbDevice, "the loopback card is on no USB device")
        XCTAssertEqual(all[2].usbDevice.map { $0.hasSuffix("/usb1/1-2") }, true)
    }

    func testTheCamerasMicrophoneIsTheCardOnItsUSBDevice() {
        let found = Microphones.of(camera: root + "/dev/webcam", sysfs: root + "/sys", procfs: root + "/proc")
        XCTAssertEqual(found?.alsaName, "hw:CARD=C920,DEV=0")
    }

    func testACameraOnNoUSBDeviceHasNone() {
        XCTAssertNil(Microphones.of(camera: "/dev/video2", sysfs: root + "/sys", procfs: root + "/proc"))
        XCTAssertNil(Microphones.cameraUSBDevice(node: "/dev/video2", sysfs: root + "/sys"))
    }
}
