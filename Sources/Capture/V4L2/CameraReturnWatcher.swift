import CV4L2
import Frames
import Glibc
import Synchronization
import SystemPackage

/// Waits for a lost camera to come back (`--on-camera-lost wait`): the same camera by its
/// `CameraIdentity` (USB vendor:product and serial, or port; off USB its bus info; the node index),
/// under whatever `/dev/videoN` it now has, never another camera that took the old number. It
/// looks once at once (vivid, and a camera that only stalled, are back as soon as camrec has closed
/// them), then again on each of the kernel's video4linux device events (netlink), not by polling
/// `/dev`. A matching node that cannot be opened yet (udev still setting its permissions, the
/// driver still probing) is tried again a quarter second later.
public final class CameraReturnWatcher: SourceReturn, Sendable {
    public let identity: CameraIdentity
    private let request: V4L2FormatRequest
    /// The recording's `--stall-timeout`, for the camera opened again.
    private let stallTimeout: UInt64?
    private let expected: (size: FrameSize, pixelFormat: V4L2PixelFormat)
    private let recordPriority: Bool
    private let timeoutSeconds: Double?
    private let system: V4L2System
    /// Where nodes and sysfs are: /dev and /sys, or a test's tree.
    private let devices: String
    private let sysfs: String
    private let log: @Sendable (String) -> Void
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let cancelled = Atomic<Bool>(false)
    /// A matching node that failed to open is looked at again after this long.
    static let retryNanoseconds: UInt64 = 250_000_000

    /// - Parameters:
    ///   - camera: the source that is recording now; its identity and format are what is waited for.
    ///   - timeoutSeconds: nil waits for ever.
    ///   - log: notes while waiting (a node that matches but cannot be opened yet), once per reason.
    public convenience init(camera: V4L2CaptureSource, timeoutSeconds: Double?, recordPriority: Bool,
                            log: @escaping @Sendable (String) -> Void) {
        self.init(identity: CameraIdentity.of(node: camera.path, busInfo: camera.identity.busInfo),
                  size: camera.frameSize, framesPerSecond: camera.framesPerSecond, pixelFormat: camera.pixelFormat,
                  timeoutSeconds: timeoutSeconds, recordPriority: recordPriority, stallTimeout: camera.requestedStallTimeout,
                  system: LinuxV4L2System(), log: log)
    }

    init(identity: CameraIdentity, size: FrameSize, framesPerSecond: Double, pixelFormat: V4L2PixelFormat,
         timeoutSeconds: Double?, recordPriority: Bool, stallTimeout: UInt64? = nil, system: V4L2System,
         devices: String = "/dev", sysfs: String = "/sys", log: @escaping @Sendable (String) -> Void) {
        self.devices = devices
        self.sysfs = sysfs
        self.identity = identity
        request = V4L2FormatRequest(size: size, framesPerSecond: framesPerSecond, pixelFormat: pixelFormat)
        expected = (size, pixelFormat)
        self.timeoutSeconds = timeoutSeconds.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        self.recordPriority = recordPriority
        self.stallTimeout = stallTimeout
        self.system = system
        self.log = log
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        if wakeRead >= 0 { Glibc.close(wakeRead) }
        if wakeWrite >= 0 { Glibc.close(wakeWrite) }
    }

    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    public func waitForReturn(of lost: FrameSource) -> SourceReturnOutcome {
        let started = MonotonicClock.now()
        let deadline = timeoutSeconds.map { started + UInt64(min($0, 1e9) * 1e9) }
        let events = camrec_open_uevent_socket()
        defer { if events >= 0 { Glibc.close(events) } }
        if events < 0 {
            log("cannot listen for device events (\(Errno(rawValue: -events))): looking for the camera again every quarter second")
        }
        var lookAt: UInt64? = started
        var notes = Set<String>()
        while true {
            if cancelled.load(ordering: .acquiring) { return .cancelled }
            let now = MonotonicClock.now()
            if let deadline, now >= deadline { return .timedOut(seconds: Double(now - started) / 1e9) }
            if let due = lookAt, now >= due {
                lookAt = nil
                switch look(lostNode: (lost as? V4L2CaptureSource)?.path) {
                case .opened(let source): return .returned(source)
                case .notThere: break
                case .notReady(let reason):
                    if notes.insert(reason).inserted { log(reason) }
                    lookAt = now + Self.retryNanoseconds
                }
                if events < 0 { lookAt = lookAt ?? now + Self.retryNanoseconds }
            }
            let until = [deadline, lookAt].compactMap { $0 }.min()
            let timeout = until.map { Int32(clamping: ($0 > now ? $0 - now : 0) / 1_000_000 + 1) } ?? -1
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: events, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, events >= 0 ? 2 : 1, timeout)
            if ready < 0 && errno != EINTR {
                // poll itself failed (out of memory): wait 100 ms for a cancel only, not a busy loop.
                var cancel = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
                _ = Glibc.poll(&cancel, 1, 100)
            }
            if events >= 0, fds[1].revents & Int16(POLLIN) != 0, Self.readEvents(events) {
                lookAt = min(lookAt ?? .max, MonotonicClock.now())
            }
        }
    }

    private enum Look {
        case opened(V4L2CaptureSource)
        case notThere
        case notReady(String)
    }

    /// The nodes now present that are this camera, tried in order; the first that opens with the same format.
    /// While the lost node itself is still there (a driver that keeps its node while the device is away,
    /// as vivid does, plugging it back in without a device event), the nodes are looked at again every
    /// quarter second until the camera opens or that node goes.
    private func look(lostNode: String?) -> Look {
        var reason: String?
        for node in V4L2DeviceDirectory.videoNodes(in: devices) {
            guard let seen = identityOf(node), identity.isSameCamera(as: seen) else { continue }
            do {
                let source = try V4L2CaptureSource(path: node, request: request, recordPriority: recordPriority,
                                                   stallTimeout: stallTimeout, system: system)
                guard source.frameSize == expected.size, source.pixelFormat == expected.pixelFormat else {
                    reason = "\(node) is the camera, but it now gives \(source.pixelFormat) \(source.frameSize), "
                        + "not \(expected.pixelFormat) \(expected.size): waiting for it to give that again"
                    continue
                }
                return .opened(source)
            } catch {
                reason = "\(node) is the camera, but it cannot be opened yet: \(error.message)"
            }
        }
        // The lost node still there: looked at again every quarter second, whatever it answers now. vivid plugs
        // itself back in when its last user closes it, with no device event; that can happen between this
        // scan's look at the node and now, so a node that opens now is no reason to stop looking.
        if reason == nil, let lostNode, access(lostNode, F_OK) == 0 {
            do {
                _ = try V4L2Device(path: lostNode, system: system)
                reason = "\(lostNode) is still there: looking at it again every quarter second"
            } catch where error.rawValue == ENODEV {
                reason = "\(lostNode) is still there but its device is gone: trying it again every quarter second"
            } catch {
                reason = "\(lostNode) is still there (\(error)): looking at it again every quarter second"
            }
        }
        return reason.map { .notReady($0) } ?? .notThere
    }

    /// A node's identity: from sysfs alone for a USB camera; off USB its bus info needs VIDIOC_QUERYCAP.
    private func identityOf(_ node: String) -> CameraIdentity? {
        let fromSysfs = CameraIdentity.of(node: node, busInfo: "", sysfs: sysfs)
        if fromSysfs.vendorProduct != nil { return fromSysfs }
        guard let device = try? V4L2Device(path: node, system: system), let capabilities = try? device.identity(),
              capabilities.capabilities.canCaptureVideo else { return nil }
        return CameraIdentity.of(node: node, busInfo: capabilities.busInfo, sysfs: sysfs)
    }

    /// Reads every pending kernel event; true when one was about a video4linux node.
    private static func readEvents(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var video = false
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            // "ACTION@DEVPATH\0KEY=VALUE\0…": only the subsystem matters here.
            if buffer[..<n].split(separator: 0).contains(where: { $0.elementsEqual("SUBSYSTEM=video4linux".utf8) }) {
                video = true
            }
        }
        return video
    }
}
