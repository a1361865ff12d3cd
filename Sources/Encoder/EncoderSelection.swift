import Bitstream
import Libav

/// Which backend `--encoder` asks for.
public enum EncoderPreference: String, Sendable, CaseIterable {
    /// VAAPI when it can encode here, libx264 otherwise.
    case auto
    case software
    case vaapi
}

/// Picks and opens the encoder backend for a recording.
public enum EncoderSelection {
    public struct Choice {
        public let encoder: VideoEncoder
        /// One line for stderr saying what `auto` chose and why, or what camrec chose for the user
        /// (constant QP for a bit rate); nil when there is nothing to say.
        public let note: String?
    }

    /// `vaapi`: opens VAAPI or throws why not (`.unavailable`, exit 73).
    /// `auto`: VAAPI when the device opens, its driver has an encode entrypoint for the codec and
    /// h264_vaapi / hevc_vaapi opens with these settings; otherwise libx264 / libx265, with a note
    /// saying why.
    /// `software`: libx264 or libx265.
    public static func make(_ preference: EncoderPreference, settings: EncoderSettings,
                            vaapiDevice: String?) throws -> Choice {
        switch preference {
        case .software:
            return Choice(encoder: try software(settings), note: nil)
        case .vaapi:
            let (encoder, skipped) = try openVAAPI(settings: settings, device: vaapiDevice)
            return Choice(encoder: encoder, note: joined([skipped, encoder.rateControlNote]))
        case .auto:
            do {
                let (encoder, skipped) = try openVAAPI(settings: settings, device: vaapiDevice)
                return Choice(encoder: encoder, note: "encoding on the GPU: \(encoder.name)"
                    + (encoder.rateControlNote.map { "; \($0)" } ?? "") + (skipped.map { " (\($0))" } ?? ""))
            } catch let error as EncoderError {
                LibavLogCapture.end()
                return Choice(encoder: try software(settings), note: "encoding in software (\(settings.codec == .h264 ? "libx264" : "libx265")): "
                    + "VA-API can't be used: \(error.message)")
            }
        }
    }

    /// libx264 and libx265 called directly: no libavcodec loaded for either.
    public static func software(_ settings: EncoderSettings) throws -> VideoEncoder {
        settings.codec == .h264 ? X264Encoder(settings: settings) : X265Encoder(settings: settings)
    }

    private static func joined(_ parts: [String?]) -> String? {
        let present = parts.compactMap { $0 }
        return present.isEmpty ? nil : present.joined(separator: "; ")
    }

    /// Opens the device and the encoder, so every reason VAAPI can't work shows up here,
    /// before any output file exists. With no device given, tries every render node in order
    /// (hybrid laptops often list a decode-only NVIDIA node or vgem first) and says which it
    /// skipped and why.
    static func openVAAPI(settings: EncoderSettings, device: String?) throws -> (VAAPIEncoder, skipped: String?) {
        if let device { return (try openVAAPI(settings: settings, node: device), nil) }
        let nodes = RenderNode.all()
        guard nodes.count > 1 else { return (try openVAAPI(settings: settings, node: nodes.first?.path), nil) }
        var failures: [String] = []
        for node in nodes {
            do {
                let encoder = try openVAAPI(settings: settings, node: node.path)
                return (encoder, failures.isEmpty ? nil : "skipped " + failures.joined(separator: "; skipped "))
            } catch let error as EncoderError {
                LibavLogCapture.end()
                failures.append("\(node.description): \(error.message)")
            }
        }
        throw EncoderError(.unavailable, "none of the \(nodes.count) render nodes can encode \(settings.codec.displayName): "
            + failures.joined(separator: "; "))
    }

    private static func openVAAPI(settings: EncoderSettings, node: String?) throws -> VAAPIEncoder {
        let opened = try VAAPIDevice.open(node, requireEncoding: settings.codec)
        let encoder = try VAAPIEncoder(settings: settings, device: opened)
        try encoder.start()
        return encoder
    }
}
