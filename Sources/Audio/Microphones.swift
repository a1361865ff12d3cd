import Capture
import SystemSupport
import Glibc

/// An ALSA capture device, as sysfs and /proc/asound describe it.
public struct Microphone: Sendable, Equatable {
    public var card: Int
    /// The card's ALSA id ("C920", "Loopback"): stable across reboots, unlike its number.
    public var cardID: String
    /// The card's name ("HD Pro Webcam C920"), or its id when /proc/asound does not say.
    public var name: String
    public var device: Int
    /// The sysfs path of the USB device it is part of; nil when it is not on USB.
    public var usbDevice: String?

    /// What camrec opens: the device itself, by the card's id.
    public var alsaName: String { "hw:CARD=\(cardID),DEV=\(device)" }
}

/// The microphones of this machine, and the one that belongs to a camera: the capture devices of a
/// sound card on the same USB device as the camera's video node (a webcam is one USB device with a
/// video interface and an audio interface).
public enum Microphones {
    /// Every ALSA capture device, by card and device number.
    public static func all(sysfs: String = "/sys", procfs: String = "/proc") -> [Microphone] {
        let classDir = sysfs + "/class/sound"
        let names = cardNames(procfs: procfs)
        var found: [Microphone] = []
        for entry in SystemFiles.entries(of: classDir) {
            // pcmC<card>D<device>c: a capture device (p is playback).
            guard entry.hasPrefix("pcmC"), entry.hasSuffix("c") else { continue }
            let numbers = entry.dropFirst(4).dropLast().split(separator: "D")
            guard numbers.count == 2, let card = Int(numbers[0]), let device = Int(numbers[1]) else { continue }
            let cardDir = classDir + "/card\(card)"
            let id = SystemFiles.firstLine(of: cardDir + "/id") ?? "\(card)"
            found.append(Microphone(card: card, cardID: id, name: names[card] ?? id, device: device,
                                    usbDevice: usbDevice(of: cardDir + "/device")))
        }
        return found.sorted { ($0.card, $0.device) < ($1.card, $1.device) }
    }

    /// The microphone on the same USB device as the camera `node` (/dev/video0 or a link to it), the
    /// first capture device of its card; nil when the camera is not on USB or has none.
    public static func of(camera node: String, sysfs: String = "/sys", procfs: String = "/proc") -> Microphone? {
        guard let camera = cameraUSBDevice(node: node, sysfs: sysfs) else { return nil }
        return all(sysfs: sysfs, procfs: procfs).first { $0.usbDevice == camera }
    }

    /// The sysfs path of the USB device the camera `node` is part of.
    public static func cameraUSBDevice(node: String, sysfs: String = "/sys") -> String? {
        usbDevice(of: sysfs + "/class/video4linux/\(CameraIdentity.nodeName(node))/device")
    }

    /// Walks up from a sysfs device to the USB device that holds it (the directory with idVendor and busnum).
    static func usbDevice(of path: String) -> String? {
        guard var current = SystemFiles.resolved(path) else { return nil }
        while current.count > 1 {
            if access(current + "/idVendor", F_OK) == 0 && access(current + "/busnum", F_OK) == 0 { return current }
            guard let slash = current.lastIndex(of: "/"), slash != current.startIndex else { return nil }
            current = String(current[..<slash])
        }
        return nil
    }

    /// Card names from /proc/asound/cards (" 1 [C920           ]: USB-Audio - HD Pro Webcam C920").
    static func cardNames(procfs: String) -> [Int: String] {
        guard let text = SystemFiles.text(of: procfs + "/asound/cards") else { return [:] }
        var names: [Int: String] = [:]
        for line in text.split(separator: "\n") {
            let trimmed = line.drop { $0 == " " }
            let parts = trimmed.split(separator: " - ", maxSplits: 1)
            guard let first = trimmed.split(separator: " ").first, let card = Int(first), parts.count == 2 else { continue }
            names[card] = String(parts[1])
        }
        return names
    }
}
