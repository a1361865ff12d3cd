import CFFmpeg
import SystemSupport

/// How libav* prints on its own. Every line goes through camrec's callback (one C state, used
/// only from this module, so every caller shares it), which replaces URL secrets with `***`.
public enum LibavLogging {
    /// Sets how much libav* prints (x264 reports its CPU flags at info level).
    public static func set(verbose: Bool) {
        camrec_av_set_log_level(verbose ? AV_LOG_INFO : AV_LOG_ERROR)
        camrec_log_release()
    }

    /// While true, the calling thread's libav* error lines are kept for `takeThreadErrors()`
    /// instead of printed (unless logging is verbose): a reconnecting output reports each outage
    /// once, in its own words, with libavformat's detail inside.
    public static func keepThreadErrors(_ keep: Bool) {
        camrec_thread_log_keep(keep ? 1 : 0)
    }

    /// The calling thread's error lines kept since the last call, joined with "; ".
    public static func takeThreadErrors() -> String? {
        var buffer = [CChar](repeating: 0, count: 512)
        camrec_thread_log_take(&buffer, buffer.count)
        return text(buffer)
    }

    /// Replaces user:password@ and query values in every URL of `line` with `***`.
    public static func redactURLs(_ line: String) -> String {
        var buffer = Array(line.utf8CString)
        // Redaction only shortens a URL's secrets or makes them 3 bytes: room for the longest case.
        buffer += [CChar](repeating: 0, count: buffer.count * 3 + 8)
        camrec_redact_urls(&buffer)
        return text(buffer) ?? ""
    }

    fileprivate static func text(_ buffer: [CChar]) -> String? {
        let text = String(cBuffer: buffer)
        return text.isEmpty ? nil : text.split(separator: "\n").joined(separator: " ")
    }
}

/// Keeps libav*'s (and, through FFmpeg, libva's) last error line so it can go into camrec's
/// own one-line message instead of being printed on its own.
public enum LibavLogCapture {
    /// From now on error lines are kept, and printed only when camrec logs verbosely.
    public static func begin() {
        camrec_log_capture(av_log_get_level() >= AV_LOG_INFO ? 0 : 1)
        _ = takeLastError()
    }

    /// libavutil's error lines are printed as they come again.
    public static func end() {
        _ = takeLastError()
        camrec_log_release()
    }

    public static func takeLastError() -> String? {
        var buffer = [CChar](repeating: 0, count: 2048)
        camrec_log_take_last_error(&buffer, buffer.count)
        return LibavLogging.text(buffer)
    }
}
