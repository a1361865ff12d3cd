import CFFmpeg

/// libavutil, libavcodec and libavformat, which camrec opens on first use (Sources/CFFmpeg/LazyLibav.c).
public enum LibavLibraries {
    /// Opens all three now; nil when they are loaded, else the one-line reason (the Debian package to
    /// install). A recording that will need them asks before it creates any file.
    public static func loadFailure() -> String? {
        loadFailure { camrec_libav_try_load($0, $1) == 0 }
    }

    /// Runs one of camrec's C loaders (libav*, libswresample, libx265, libasound: Sources/CLazyLoad), which
    /// writes its one-line reason into the buffer it is given when it fails: nil when `load` succeeded,
    /// else that line.
    public static func loadFailure(_ load: (UnsafeMutablePointer<CChar>, Int) -> Bool) -> String? {
        let size = 1024
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer -> String? in
            let base = buffer.baseAddress!
            base.initialize(repeating: 0, count: size)
            if load(base, size) { return nil }
            base[size - 1] = 0
            return String(cString: base)
        }
    }
}
