import CFFmpeg
import Libav
import Bitstream
import Frames

/// One black frame encoded inside `start()`, before any output exists.
///
/// Real drivers accept settings at `avcodec_open2` that they refuse only when the first picture
/// is encoded (a rate-control mode, a size, a low-power entrypoint without its firmware), and
/// some write no parameter sets at all when they take no packed headers. Either would surface only
/// after the file was created, too late for `--encoder auto` to fall back. So `start()` encodes
/// this frame on a context of its own (an encoder that was flushed can't be reused), checks
/// the packet, and throws `.unavailable` with the reason when it is not usable.
enum VAAPIFirstFrame {
    /// What the first frame showed.
    struct Outcome {
        /// The packet carried every parameter set of the codec (SPS PPS, VPS SPS PPS), or the
        /// context's extradata did.
        var hasParameterSets: Bool
        var packetBytes: Int
    }

    static func encode(context: UnsafeMutablePointer<AVCodecContext>, codec: VideoCodec, frames: UnsafeMutablePointer<AVBufferRef>,
                       uploadPath: VAAPIUploadPath, display: VADisplay, width: Int, height: Int) throws -> Outcome {
        guard let surface = av_frame_alloc(), let mapping = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw EncoderError(.unavailable, "out of memory encoding a first frame")
        }
        var s: UnsafeMutablePointer<AVFrame>? = surface, m: UnsafeMutablePointer<AVFrame>? = mapping
        var p: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_frame_free(&m); av_frame_free(&s); av_packet_free(&p) }

        var status = av_hwframe_get_buffer(frames, surface, 0)
        guard status >= 0 else { throw refused("no VA surface for a first frame", status) }
        try fillBlack(surface, mapping: mapping, uploadPath: uploadPath, display: display, width: width, height: height)
        surface.pointee.pts = 0
        surface.pointee.pict_type = AV_PICTURE_TYPE_I
        status = avcodec_send_frame(context, surface)
        av_frame_unref(surface)
        let name = String(cString: context.pointee.codec.pointee.name)
        guard status >= 0 else { throw refused("\(name) failed to encode a first frame", status) }
        status = avcodec_send_frame(context, nil)
        guard status >= 0 else { throw refused("\(name) failed to finish a first frame", status) }

        var outcome = Outcome(hasParameterSets: false, packetBytes: 0)
        var types = Set<NALRole>()
        while true {
            status = avcodec_receive_packet(context, packet)
            if status == camrec_AVERROR_EOF { break }
            guard status >= 0 else { throw refused("\(name) failed to deliver a first frame", status) }
            let data = UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))
            outcome.packetBytes += data.count
            nalTypes(in: data, codec: codec, into: &types)
            av_packet_unref(packet)
        }
        if let extradata = context.pointee.extradata, context.pointee.extradata_size > 0 {
            nalTypes(in: UnsafeRawBufferPointer(start: extradata, count: Int(context.pointee.extradata_size)), codec: codec, into: &types)
        }
        outcome.hasParameterSets = codec.parameterSetOrder.allSatisfy { types.contains(.parameterSet($0)) }
        return outcome
    }

    /// The roles of the NAL units in an Annex B buffer.
    static func nalTypes(in buffer: UnsafeRawBufferPointer, codec: VideoCodec, into types: inout Set<NALRole>) {
        AnnexBScanner.forEachUnit(in: buffer) { range, _ in
            types.insert(codec.role(ofType: codec.typeValue(of: buffer[range.lowerBound..<range.upperBound])))
        }
    }

    /// Y 16, Cb Cr 128, written the way frames will be (a derived mapping or a VA image).
    private static func fillBlack(_ surface: UnsafeMutablePointer<AVFrame>, mapping: UnsafeMutablePointer<AVFrame>,
                                  uploadPath: VAAPIUploadPath, display: VADisplay, width: Int, height: Int) throws {
        func fill(_ planes: [PlaneMemory]) {
            for (index, plane) in planes.enumerated() {
                let rows = index == 0 ? height : (height + 1) / 2
                for row in 0..<rows { (plane.base + row * plane.stride).update(repeating: index == 0 ? 16 : 128, count: (width + 1) / 2 * 2) }
            }
        }
        if uploadPath.isDirect {
            mapping.pointee.format = AV_PIX_FMT_NV12.rawValue
            let status = av_hwframe_map(mapping, surface, Int32(AV_HWFRAME_MAP_WRITE | AV_HWFRAME_MAP_OVERWRITE))
            guard status >= 0 else { throw refused("cannot map a VA surface for a first frame", status) }
            fill(VAAPISurfaceBacking.planes(of: mapping))
            av_frame_unref(mapping)
        } else {
            do {
                let image = try VAAPIImageMapping(display: display, width: width, height: height)
                fill(try image.map())
                try image.put(into: VASurfaceID(UInt(bitPattern: surface.pointee.data.3)))
            } catch {
                throw EncoderError(.unavailable, "cannot upload a first frame: \(error)")
            }
        }
    }

    private static func refused(_ what: String, _ status: Int32) -> EncoderError {
        let detail = LibavLogCapture.takeLastError().map { " (\($0))" } ?? ""
        return EncoderError(.unavailable, "\(what): \(libavErrorDescription(status))\(detail)")
    }
}
