import Bitstream
import ArgumentParser
import Encoder
import Recorder
import Libav

/// `camrec encoders`: which H.264 and H.265 encoders this machine can use, and what `--encoder auto` picks.
struct EncodersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encoders",
        abstract: "Show the H.264 and H.265 encoders camrec can use here: VA-API (GPU), libx264 and libx265 (software).",
        discussion: """
        For VA-API: every render node under /dev/dri (or the one --vaapi-device names), with the GPU's \
        vendor, the driver's vendor string, and each H.264 and H.265 profile the driver lists with its entrypoints \
        (EncSlice: the GPU's encoder; EncSliceLP: its low-power encoder; VLD: decoding only). \
        `--encoder auto` and `--encoder vaapi` use the first node that can encode the codec (H.265: the Main profile). \
        Exits 0 when at least one encoder can run, 73 when none can.
        """
    )

    @Option(help: ArgumentHelp("VA-API device: a DRM render node (default: every /dev/dri/renderD* in turn), or an X11 display such as :99 for testing.", valueName: "path"))
    var vaapiDevice: String?

    func run() throws {
        SignalService.unblock()
        LibavLogging.set(verbose: false)
        var firstUsable: [VideoCodec: String] = [:]
        func note(_ codecs: Set<VideoCodec>, _ device: String) {
            for codec in codecs where firstUsable[codec] == nil { firstUsable[codec] = device }
        }
        if let vaapiDevice {
            note(describe(vaapiDevice, label: vaapiDevice), vaapiDevice)
        } else {
            let nodes = RenderNode.all()
            if nodes.isEmpty {
                print("VA-API: not usable: no GPU render node: /dev/dri has no renderD* device "
                    + "(no GPU, or its kernel driver is not loaded)")
            }
            for node in nodes { note(describe(node.path, label: node.description), node.path) }
        }
        let x264 = X264Encoder.isAvailable
        let x265Problem = X265Encoder.unavailableReason
        let x265 = x265Problem == nil
        print("libx264 (software): " + (x264 ? "available" : "not available (this FFmpeg has no libx264)"))
        print("libx265 (software, --codec hevc): " + (x265Problem.map { "not available: \($0)" } ?? "available"))
        print("--encoder auto uses: " + (firstUsable[.h264].map { "VA-API on \($0)" } ?? (x264 ? "libx264" : "nothing"))
            + " for H.264, " + (firstUsable[.hevc].map { "VA-API on \($0)" } ?? (x265 ? "libx265" : "nothing")) + " for H.265")
        if firstUsable.isEmpty && !x264 && !x265 { throw ReportedFailure(status: .encoderUnavailable) }
    }

    /// Prints what the VA driver on `device` offers; returns the codecs it can encode.
    private func describe(_ device: String, label: String) -> Set<VideoCodec> {
        do {
            let opened = try VAAPIDevice.open(device, requireEncoding: nil)
            let caps = opened.capabilities
            print("VA-API device: \(label)")
            print("  driver: \(caps.vendor)")
            var usable: Set<VideoCodec> = []
            for codec in VideoCodec.allCases {
                let profiles = caps.profiles(codec)
                if profiles.isEmpty {
                    print("  \(codec.displayName) profiles: none")
                } else {
                    print("  \(codec.displayName) profiles:")
                    for profile in profiles {
                        let camrecName = profile.camrecProfile.map { " (--profile \($0.rawValue))" } ?? ""
                        print("    \(profile.name)\(camrecName): \(profile.entrypoints.joined(separator: ", "))")
                    }
                }
                let encodes = VAAPIEncoder.chooseProfile(codec, .baseline, in: caps) != nil
                let why = codec == .h264 ? "no H.264 encode entrypoint" : "no encode entrypoint for H.265 Main"
                print("  \(codec.displayName) encoding: " + (encodes ? "yes" : "no (\(why))"))
                if encodes { usable.insert(codec) }
            }
            return usable
        } catch let error as EncoderError {
            print("VA-API device: \(label): not usable: \(error.message)")
            return []
        } catch {
            print("VA-API device: \(label): not usable: \(error)")
            return []
        }
    }
}
