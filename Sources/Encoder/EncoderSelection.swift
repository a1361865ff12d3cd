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
    /// `auto`: VAAPI when the device opens, its driver has an H.264 encode entrypoint and
    /// h264_vaapi opens with these settings; otherwise libx264, with a note saying why.
    /// `software`: libx264.
    public static func make(_ preference: EncoderPreference, settings: EncoderSettings,
                            vaapiDevice: String?) throws -> Choice {
        if settings.codec == .hevc {
            guard preference != .vaapi else {
                throw EncoderError(.unavailable, "camrec encodes H.265 with libx265 only so far (no hevc_vaapi yet); use --encoder software")
            }
            return Choice(encoder: try SoftwareEncoder(settings: settings),
                          note: preference == .auto ? "encoding H.265 in software (libx265): camrec has no VA-API H.265 encoder yet" : nil)
        }
        switch preference {
        case .software:
            return Choice(encoder: try SoftwareEncoder(settings: settings), note: nil)
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
                let software = try SoftwareEncoder(settings: settings)
                return Choice(encoder: software, note: "encoding in software (libx264): VA-API can't be used: \(error.message)")
            }
        }
    }

    private static func joined(_ parts: [String?]) -> String? {
        let present = parts.compactMap { $0 }
        return present.isEmpty ? nil : present.joined(separator: "; ")
    }

    /// Opens the device and the encoder, so every reason VAAPI can't work shows up here,
    /// before any output file exists. With no device given, tries every render node in order
    /// (hybrid laptops often list a decode-only NVIDIA node or vgem first) and says which it
    /// skipped and why.
    static func openVAAPI(settings: EncoderSettings, device: String?) throws -> (VAAPIH264Encoder, skipped: String?) {
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
        throw EncoderError(.unavailable, "none of the \(nodes.count) render nodes can encode H.264: "
            + failures.joined(separator: "; "))
    }

    private static func openVAAPI(settings: EncoderSettings, node: String?) throws -> VAAPIH264Encoder {
        let opened = try VAAPIDevice.open(node)
        let encoder = try VAAPIH264Encoder(settings: settings, device: opened)
        try encoder.start()
        return encoder
    }
}
