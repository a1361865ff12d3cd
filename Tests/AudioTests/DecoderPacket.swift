import CFFmpeg
import XCTest

/// Hands `bytes` to the decoder `context` as one packet through `packet`, whose data points at them only
/// for the call.
func sendPacket(_ bytes: [UInt8], to context: UnsafeMutablePointer<AVCodecContext>, using packet: UnsafeMutablePointer<AVPacket>,
                file: StaticString = #filePath, line: UInt = #line) {
    bytes.withUnsafeBytes { raw in
        packet.pointee.data = UnsafeMutablePointer(mutating: raw.baseAddress!.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(raw.count)
        XCTAssertGreaterThanOrEqual(avcodec_send_packet(context, packet), 0, file: file, line: line)
        packet.pointee.data = nil
        packet.pointee.size = 0
    }
}
