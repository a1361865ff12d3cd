import CFFmpeg

/// libavutil's description of an AVERROR code.
public func libavErrorDescription(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    camrec_av_error_string(code, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

