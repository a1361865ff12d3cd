import CFFmpeg

/// libavutil, libavcodec and libavformat, which camrec opens on first use (Sources/CFFmpeg/LazyLibav.c).
public enum LibavLibraries {
    /// Opens all three now; nil when they are loaded, else the one-line reason (the Debian package to
    /// install). A recording that will need them asks before it creates any file.
    public static func loadFailure() -> String? {
        var error = [CChar](repeating: 0, count: 1024)
        guard camrec_libav_try_load(&error, error.count) != 0 else { return nil }
        return String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
