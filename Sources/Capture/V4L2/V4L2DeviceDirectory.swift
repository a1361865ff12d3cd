import Glibc
import SystemSupport

/// The V4L2 nodes on this machine, and which of them capture video.
public enum V4L2DeviceDirectory {
    /// `/dev/video*`, in numeric order (video2 before video10).
    public static func videoNodes(in directory: String = "/dev") -> [String] {
        let numbers = SystemFiles.entries(of: directory).compactMap { name in
            name.hasPrefix("video") ? Int(name.dropFirst(5)) : nil
        }
        return numbers.sorted().map { "\(directory)/video\($0)" }
    }

    /// The nodes that can capture video, with their identities; nodes that fail to open are skipped.
    static func captureNodes(system: V4L2System) -> [(path: String, identity: V4L2DeviceIdentity)] {
        videoNodes().compactMap { path in
            guard let device = try? V4L2Device(path: path, system: system),
                  let identity = try? device.identity(),
                  identity.capabilities.canCaptureVideo else { return nil }
            return (path, identity)
        }
    }

    /// "/dev/video0 (vivid: Vivid webcam), /dev/video4 (uvcvideo: HD Webcam)" or a hint when there are none.
    static func captureNodeSummary(system: V4L2System, excluding path: String? = nil) -> String {
        let nodes = captureNodes(system: system).filter { $0.path != path }
        if nodes.isEmpty { return "no video capture devices found (is a camera plugged in?)" }
        return "capture devices here: " + nodes.map { "\($0.path) (\($0.identity.card))" }.joined(separator: ", ")
    }
}
