import CFFmpeg

/// libavutil, libavcodec and libavformat, which camrec opens on first use (Sources/CFFmpeg/LazyLibav.c).
public enum LibavLibraries {
    /// Opens all three now; nil when they are loaded, else the one-line reason (the Debian package to
    /// install). A recording that will need them asks before it creates any file.
    public static func loadFailure() -> String? {
        LazyLibrary.loadFailure { camrec_libav_try_load($0, $1) == 0 }
    }
}
