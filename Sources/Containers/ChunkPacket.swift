import CFFmpeg
import Hub

/// Hands a chunk's bytes to libavformat as one packet without copying them.
enum ChunkPacket {
    /// Writes `chunk` as `packet` (whose other fields the caller has set): straight through with
    /// `av_write_frame` (the muxer only reads it during the call), or, `interleaved`, through
    /// `av_interleaved_write_frame`, which keeps packets until every track has caught up: the packet
    /// then owns a reference to the chunk (a buffer that releases it when libavformat frees it), so
    /// nothing is copied and the chunk goes back to its pool only once it is written.
    static func write(_ chunk: StreamChunk, as packet: UnsafeMutablePointer<AVPacket>, interleaved: Bool,
                      into context: UnsafeMutablePointer<AVFormatContext>) -> Int32 {
        // Read-only: the chunk's bytes are shared with other subscribers on other threads (a mutating
        // access could copy and store a new buffer under them), and never change while it is held.
        chunk.bytes.withUnsafeBytes { raw in
            let data = raw.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: UInt8.self)) }
            guard interleaved else {
                packet.pointee.data = data
                packet.pointee.size = Int32(clamping: raw.count)
                let written = av_write_frame(context, packet)
                packet.pointee.data = nil
                packet.pointee.size = 0
                return written
            }
            let holder = Unmanaged.passRetained(chunk)
            chunk.retain()
            guard let data, let buffer = av_buffer_create(data, raw.count, { opaque, _ in
                let chunk = Unmanaged<StreamChunk>.fromOpaque(opaque!).takeRetainedValue()
                chunk.release()
            }, holder.toOpaque(), AV_BUFFER_FLAG_READONLY) else {
                holder.release()
                chunk.release()
                return camrec_averror(ENOMEM)
            }
            packet.pointee.buf = buffer
            packet.pointee.data = data
            packet.pointee.size = Int32(clamping: raw.count)
            // Takes over the packet's reference, and leaves the packet blank.
            return av_interleaved_write_frame(context, packet)
        }
    }
}
