import CFFmpeg
import SystemSupport

/// The media libraries this process runs with (for `camrec --version`): FFmpeg's from the libraries
/// themselves, libx264, libx265 and libva from the files the dynamic linker loaded (their sonames
/// carry the version), so a library upgraded under camrec shows.
public enum LibraryVersions {
    public static var lines: [String] {
        let ffmpeg = [("libavcodec", avcodec_version()), ("libavformat", avformat_version()), ("libavutil", avutil_version())]
            .map { "\($0.0) \(dotted($0.1))" }.joined(separator: ", ")
        let loaded = loadedLibraries()
        var others: [String] = []
        if let x264 = loaded.first(where: { $0.hasPrefix("libx264.so.") }) {
            others.append("libx264 build \(x264.dropFirst("libx264.so.".count)) (\(x264))")
        }
        if let x265 = loaded.first(where: { $0.hasPrefix("libx265.so.") }) {
            others.append("libx265 build \(x265.dropFirst("libx265.so.".count)) (\(x265))")
        }
        if let va = loaded.first(where: { $0.hasPrefix("libva.so.") }) {
            // libva's soname is 2.(100 × minor + micro).0: libva.so.2.1700.0 is libva 2.17.0.
            let parts = va.dropFirst("libva.so.".count).split(separator: ".").compactMap { Int($0) }
            others.append(parts.count >= 2 ? "libva \(parts[0]).\(parts[1] / 100).\(parts[1] % 100) (\(va))" : va)
        }
        return [ffmpeg, others.isEmpty ? "no libx264, libx265 or libva loaded" : others.joined(separator: ", ")]
    }

    /// FFmpeg's packed version (major << 16 | minor << 8 | micro) as text.
    static func dotted(_ version: UInt32) -> String {
        "\(version >> 16).\(version >> 8 & 0xFF).\(version & 0xFF)"
    }

    /// The file names of the shared libraries mapped into this process (/proc/self/maps).
    static func loadedLibraries() -> [String] {
        guard let lines = SystemFiles.lines(of: "/proc/self/maps", limit: 16 << 20) else { return [] }
        var names: [String] = []
        for text in lines {
            guard let slash = text.lastIndex(of: "/") else { continue }
            let name = String(text[text.index(after: slash)...])
            if name.contains(".so"), !names.contains(name) { names.append(name) }
        }
        return names
    }
}
