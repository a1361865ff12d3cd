import ArgumentParser
import Encoder
import Recorder
import Libav

/// `camrec encoders`: which H.264 encoders this machine can use, and what `--encoder auto` picks.
struct EncodersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encoders",
        abstract: "Show the H.264 encoders camrec can use here: VA-API (GPU) and libx264 (software).",
        discussion: """
        For VA-API: every render node under /dev/dri (or the one --vaapi-device names), with the GPU's \
        vendor, the driver's vendor string, and each H.264 profile the driver lists with its entrypoints \
        (EncSlice: the GPU's encoder; EncSliceLP: its low-power encoder; VLD: decoding only). \
        `--encoder auto` and `--encoder vaapi` use the first node that can encode. \
        Exits 0 when at least one encoder can run, 73 when none can.
        """
    )

    @Option(help: ArgumentHelp("VA-API device: a DRM render node (default: every /dev/dri/renderD* in turn), or an X11 display such as :99 for testing.", valueName: "path"))
    var vaapiDevice: String?

    func run() throws {
        SignalWatcher.unblock()
        LibavLogging.set(verbose: false)
        var firstUsable: String?
        if let vaapiDevice {
            if describe(vaapiDevice, label: vaapiDevice) { firstUsable = vaapiDevice }
        } else {
            let nodes = RenderNode.all()
            if nodes.isEmpty {
                print("VA-API: not usable: no GPU render node: /dev/dri has no renderD* device "
                    + "(no GPU, or its kernel driver is not loaded)")
            }
            for node in nodes where describe(node.path, label: node.description) && firstUsable == nil {
                firstUsable = node.path
            }
        }
        let x264 = SoftwareEncoder.isAvailable
        print("libx264 (software): " + (x264 ? "available" : "not available (this FFmpeg has no libx264)"))
        print("libx265 (software, --codec hevc): " + (SoftwareEncoder.isAvailable(.hevc) ? "available" : "not available (this FFmpeg has no libx265)"))
        print("--encoder auto uses: " + (firstUsable.map { "VA-API on \($0)" } ?? (x264 ? "libx264" : "nothing")))
        if firstUsable == nil && !x264 { throw ReportedFailure(status: .encoderUnavailable) }
    }

    /// Prints what the VA driver on `device` offers; true when it can encode H.264.
    private func describe(_ device: String, label: String) -> Bool {
        do {
            let opened = try VAAPIDevice.open(device, requireH264Encode: false)
            let caps = opened.capabilities
            print("VA-API device: \(label)")
            print("  driver: \(caps.vendor)")
            if caps.h264.isEmpty {
                print("  H.264 profiles: none")
            } else {
                print("  H.264 profiles:")
                for profile in caps.h264 {
                    let camrecName = profile.camrecProfile.map { " (--profile \($0.rawValue))" } ?? ""
                    print("    \(profile.name)\(camrecName): \(profile.entrypoints.joined(separator: ", "))")
                }
            }
            print("  H.264 encoding: " + (caps.canEncodeH264 ? "yes" : "no (no H.264 encode entrypoint)"))
            return caps.canEncodeH264
        } catch let error as EncoderError {
            print("VA-API device: \(label): not usable: \(error.message)")
            return false
        } catch {
            print("VA-API device: \(label): not usable: \(error)")
            return false
        }
    }
}
