/// A library camrec opens on first use (libav*, libswresample, libx265, libasound: Sources/CLazyLoad).
public enum LazyLibrary {
    /// Runs one of camrec's C loaders, which writes its one-line reason (the Debian package to install)
    /// into the buffer it is given when it fails: nil when `load` succeeded, else that line.
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
