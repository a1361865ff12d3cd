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
        For VA-API: the device, the driver's vendor string, and each H.264 profile the driver lists with \
        its entrypoints (EncSlice: the GPU's encoder; EncSliceLP: its low-power encoder; VLD: decoding \
        only). Exits 0 when at least one encoder can run, 73 when none can.
        """
    )

    @Option(help: ArgumentHelp("VA-API device: a DRM render node (default: the first /dev/dri/renderD*), or an X11 display such as :99 for testing.", valueName: "path"))
    var vaapiDevice: String?

    func run() throws {
        SignalWatcher.unblock()
        LibavLogging.set(verbose: false)
        var vaapiUsable = false
        do {
            let device = try VAAPIDevice.open(vaapiDevice, requireH264Encode: false)
            let caps = device.capabilities
            print("VA-API device: \(device.device)")
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
            vaapiUsable = caps.canEncodeH264
            print("  H.264 encoding: " + (vaapiUsable ? "yes" : "no (no H.264 encode entrypoint)"))
        } catch let error as EncoderError {
            print("VA-API: not usable: \(error.message)")
        }
        let x264 = SoftwareH264Encoder.isAvailable
        print("libx264 (software): " + (x264 ? "available" : "not available (this FFmpeg has no libx264)"))
        print("--encoder auto uses: " + (vaapiUsable ? "VA-API" : x264 ? "libx264" : "nothing"))
        if !vaapiUsable && !x264 { throw ReportedFailure(status: .encoderUnavailable) }
    }
}
