import CFFmpeg
import SystemSupport

/// libavutil's description of an AVERROR code.
public func libavErrorDescription(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    camrec_av_error_string(code, &buffer, buffer.count)
    return String(cBuffer: buffer)
}

