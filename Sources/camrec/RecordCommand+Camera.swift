import ArgumentParser
import Bitstream
import Capture
import Encoder
import Logging

/// `--encoder camera`: a camera that sends H.264 or H.265 itself, recorded and served as it is.
extension RecordCommand {
    /// The codec the camera encodes when camrec passes its stream on: `--encoder camera` (H.264 unless
    /// `--pixel-format HEVC` or `--codec hevc`), or `--pixel-format H264`/`HEVC` with `--encoder auto`.
    var cameraCodec: VideoCodec? {
        switch (encoder, pixelFormat) {
        case (.camera, .some(.hevc)), (.auto, .some(.hevc)): return .hevc
        case (.camera, .some(.h264)), (.auto, .some(.h264)): return .h264
        case (.camera, _): return codec.codec ?? .h264
        default: return nil
        }
    }

    /// The pixel format asked of the camera: the camera's codec when it encodes.
    var requestedPixelFormat: V4L2PixelFormat? {
        guard let cameraCodec else { return pixelFormat }
        return cameraCodec == .hevc ? .hevc : .h264
    }

    /// What cannot go with a camera that encodes, said before anything is opened (exit 64).
    func checkCameraEncoding() throws {
        if let format = pixelFormat, format.isCompressedVideo, encoder == .software || encoder == .vaapi {
            throw ValidationError("--pixel-format \(format) is the camera's own \(format == .hevc ? "H.265" : "H.264"): camrec records it as it is "
                + "(--encoder camera); to encode the picture yourself ask the camera for raw frames or MJPEG (camrec devices lists them)")
        }
        guard let cameraCodec else { return }
        if encoder == .camera, let format = pixelFormat, !format.isCompressedVideo {
            throw ValidationError("--encoder camera records the camera's own H.264 or H.265: give --pixel-format H264 or HEVC, not \(format)")
        }
        if testPattern || testScene || input != nil {
            throw ValidationError("--encoder camera records what a camera encodes (--device); the test pattern, the test scene and --input have no encoder of their own")
        }
        if let given = codec.codec, given != cameraCodec {
            throw ValidationError("--codec \(codec.rawValue): the camera sends \(cameraCodec.displayName) (--pixel-format \(requestedPixelFormat!)), and camrec does not re-encode it")
        }
        if let other = outputs.first(where: { self.codec(of: $0) != cameraCodec }) {
            throw ValidationError("\(other) is \(self.codec(of: other).displayName), but the camera sends \(cameraCodec.displayName) and camrec does not re-encode it: "
                + "name the file .\(cameraCodec == .hevc ? "h265" : "h264")")
        }
        let encoding = [(qp != nil, "--qp"), (slices != 1, "--slices"), (threads != 1, "--threads"), (vaapiDevice != nil, "--vaapi-device"),
                        (encoderSei, "--encoder-sei")].filter(\.0).map(\.1)
        if let option = encoding.first {
            throw ValidationError("\(option) sets camrec's encoder, and with --encoder camera the camera encodes; leave it out "
                + "(the camera's IDR period and bit rate follow --keyframe-interval and --bitrate where it has the controls)")
        }
        if events.motion {
            throw ValidationError("--motion needs the camera's pixels, and with --encoder camera nothing is decoded; "
                + "record raw frames or MJPEG (--pixel-format) for motion, or trigger events by SIGUSR1 or POST /api/events")
        }
    }

    /// The pass-through "encoder" for the camera's stream, after the camera's controls were set: the IDR
    /// period (`interval`) and the bit rate (`--bitrate`) where it has them, and the line that says so.
    func makeCameraEncoder(source: FrameSource, codec: VideoCodec, interval: Int, logger: Logger) throws -> (encoder: VideoEncoder, notice: String) {
        guard let camera = source as? V4L2CaptureSource, camera.deliversCompressedVideo else {
            throw EncoderError(.unavailable, "--encoder camera needs a camera sending H.264 or H.265")
        }
        let controls = camera.codecControls
        let notice = "camrec: " + controls.apply(keyframeInterval: interval, bitsPerSecond: bitrate?.bitsPerSecond)
        let encoder = CameraStreamEncoder(codec: codec, forceKeyFrame: controls.available[.forceKeyFrame] == nil ? nil : {
            controls.forceKeyFrame()
        })
        encoder.onFinding = { printLine("camrec: warning: \($0)") }
        logger.debug("encoder: \(encoder.name)")
        return (encoder, notice)
    }
}
