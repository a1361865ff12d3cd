import ArgumentParser
import Bitstream
import NetStream
import Outputs

extension RecordCommand {
    /// The codec of one output: a raw file's extension decides (.h265, .hevc, .265 for H.265; .h264,
    /// .264 for H.264); everything else (stdout, TCP, containers, servers, --listen, --http) takes
    /// `--codec`, H.264 by default. Outputs of two codecs make two encodings from one capture.
    func codec(of output: String) -> VideoCodec {
        if output != "-" && !TCPEndpoint.looksLikeURL(output) && !MediaServerURL.looksLikeURL(output) {
            switch output.split(separator: ".").last?.lowercased() {
            case "h265", "hevc", "265": return .hevc
            case "h264", "264": return .h264
            default: break
            }
        }
        return defaultCodec
    }

    /// `--codec`, or H.264.
    var defaultCodec: VideoCodec { codec.codec ?? cameraCodec ?? .h264 }

    /// The codecs this recording encodes, in the order their first output was given (the first is
    /// the one the status line and the summary count).
    var codecsInUse: [VideoCodec] {
        var codecs: [VideoCodec] = []
        for output in outputs where !codecs.contains(codec(of: output)) { codecs.append(codec(of: output)) }
        if (!listen.isEmpty || http != nil || rtsp != nil) && !codecs.contains(defaultCodec) { codecs.append(defaultCodec) }
        return codecs.isEmpty ? [defaultCodec] : codecs
    }

    /// What each codec cannot go to yet, said before anything is opened.
    func checkCodecs() throws {
        let codecs = codecsInUse
        if let given = codec.codec, !codecs.contains(given) {
            throw ValidationError("--codec \(codec.rawValue): no output takes it (each raw file's name says its codec: "
                + outputs.map { "\($0) is \(self.codec(of: $0).displayName)" }.joined(separator: ", ") + ")")
        }
        if codecs.count > 1 && encoder == .vaapi {
            throw ValidationError("two encodings from one capture run in software so far (libx264 and libx265 share one I420 pool); "
                + "use --encoder software or auto")
        }
        guard codecs.contains(.hevc) else { return }
        if profile != .high && !codecs.contains(.h264) {
            throw ValidationError("--profile is for H.264; H.265 is recorded in the Main profile")
        }
        // x265.h: X265_MAX_FRAME_THREADS. Past it libx265 refuses the whole parameter set, saying only that.
        if threads > 16 {
            throw ValidationError("--threads \(threads): libx265 runs at most 16 frame threads; give 16 or fewer for H.265 (0 lets it choose)")
        }
        if http != nil && defaultCodec == .hevc {
            throw ValidationError("--http shows H.264 only so far; record H.265 without it, or record H.264")
        }
        for output in outputs where codec(of: output) == .hevc {
            if let server = try? MediaServerURL(output), server.kind == .rtmp {
                throw ValidationError("\(server.redacted): RTMP (FLV) carries H.264 only; publish H.265 over rtsp:// or srt://, or record H.264")
            }
        }
    }
}
