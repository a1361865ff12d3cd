import ArgumentParser
import Bitstream
import Outputs

extension RecordCommand {
    /// The recording's codec: `--codec`, else the one the file outputs' extensions name (.h265,
    /// .hevc, .265 for H.265; .h264, .264 for H.264), else H.264. One codec per recording.
    func chosenCodec() throws -> VideoCodec {
        var named: [(output: String, codec: VideoCodec)] = []
        for output in outputs where output != "-" && !TCPEndpoint.looksLikeURL(output) && !MediaServerURL.looksLikeURL(output) {
            switch output.split(separator: ".").last?.lowercased() {
            case "h265", "hevc", "265": named.append((output, .hevc))
            case "h264", "264": named.append((output, .h264))
            default: break
            }
        }
        if let given = codec.codec {
            if let clash = named.first(where: { $0.codec != given }) {
                throw ValidationError("\(clash.output) names \(clash.codec.displayName) but --codec is \(codec.rawValue): rename it, or drop --codec")
            }
            return given
        }
        if let first = named.first, let other = named.first(where: { $0.codec != first.codec }) {
            throw ValidationError("\(first.output) is \(first.codec.displayName) and \(other.output) is \(other.codec.displayName): "
                + "camrec records one codec at a time so far; record them in two runs")
        }
        return named.first?.codec ?? .h264
    }

    /// What H.265 cannot go to yet, said before anything is opened.
    func checkCodec(_ codec: VideoCodec) throws {
        guard codec == .hevc else { return }
        if encoder == .vaapi {
            throw ValidationError("H.265: camrec encodes it with libx265 only so far; use --encoder software or auto")
        }
        if profile != .high {
            throw ValidationError("--profile is for H.264; H.265 is recorded in the Main profile")
        }
        if http != nil {
            throw ValidationError("--http shows H.264 only so far; record H.265 without it, or record H.264")
        }
        for output in outputs {
            if MediaServerURL.looksLikeURL(output) {
                throw ValidationError("\(output): publishing H.265 to a media server is not supported yet (RTMP carries H.264 only); record H.264 to publish")
            }
            if output != "-" && !TCPEndpoint.looksLikeURL(output) && (files.format ?? ContainerFormat(fileName: output)) != .raw {
                throw ValidationError("\(output): H.265 in MP4, Matroska or MPEG-TS is not supported yet; record to a .h265 file "
                    + "(ffmpeg -i rec.h265 -c copy rec.mp4 wraps it)")
            }
        }
    }
}
