import CFFmpeg
import Libav
import Frames

/// What every libavcodec backend does with its output: receive each ready packet and hand
/// it on as an `EncodedPacket`, with the capture time of the frame it encodes.
///
/// Timestamps count frames (pts = source sequence number), so drops show as gaps in time.
public struct PacketDrain {
    let frameRate: (numerator: Int32, denominator: Int32)
    /// For error messages: "libx264", "h264_vaapi".
    let encoderName: String
    private var captureTimes = CaptureTimeRing()
    /// Empty packets dropped: frames the encoder skipped (Mesa's VA-API frame skipping in CBR
    /// returns a 0-byte coded buffer). Not a failure; the frame is simply not in the stream.
    private(set) var emptyPackets = 0

    public init(frameRate: (numerator: Int32, denominator: Int32), encoderName: String) {
        self.frameRate = frameRate
        self.encoderName = encoderName
    }

    public mutating func remember(sequence: UInt64, captureTimeNanoseconds: UInt64, presentationTimeNanoseconds: UInt64) {
        captureTimes.remember(sequence: sequence, captureTimeNanoseconds: captureTimeNanoseconds,
                              presentationTimeNanoseconds: presentationTimeNanoseconds)
    }

    /// Passes every packet libavcodec has ready to `onPacket`; returns at EAGAIN or EOF.
    public mutating func drain(_ context: UnsafeMutablePointer<AVCodecContext>, _ packet: UnsafeMutablePointer<AVPacket>,
               onPacket: ((EncodedPacket) -> Void)?) throws {
        while true {
            let status = avcodec_receive_packet(context, packet)
            if status == camrec_AVERROR_EAGAIN || status == camrec_AVERROR_EOF { return }
            guard status >= 0 else {
                throw EncoderError(.failed, "\(encoderName) failed to deliver a packet: \(libavErrorDescription(status))")
            }
            defer { av_packet_unref(packet) }
            if packet.pointee.size <= 0 {
                emptyPackets += 1
                continue
            }
            let sequence = UInt64(max(0, packet.pointee.pts))
            let pts = captureTimes.presentationTime(of: sequence, orAt: frameRate)
            let data = UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))
            onPacket?(EncodedPacket(data: data, isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0,
                                    sequence: sequence, presentationTimeNanoseconds: pts,
                                    captureTimeNanoseconds: captureTimes.captureTime(of: sequence)))
        }
    }
}
