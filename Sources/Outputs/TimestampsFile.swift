import Glibc
import SystemSupport

/// A sidecar of frame timestamps in mkvmerge's "timecode format v2" (one millisecond value per frame,
/// from the segment's first frame), which rpicam-vid users already know: raw H.264 carries no timing,
/// so `mkvmerge -o out.mkv --timestamps 0:NAME.pts NAME.h264` gets the speed right.
final class TimestampsFile {
    let path: String
    private var text = "# timecode format v2\n"
    private var first: UInt64?

    init(forVideo videoPath: String) {
        path = Self.sidecarPath(for: videoPath)
    }

    /// `cam-0001.h264` → `cam-0001.pts`.
    static func sidecarPath(for videoPath: String) -> String {
        let slash = videoPath.lastIndex(of: "/").map { videoPath.index(after: $0) } ?? videoPath.startIndex
        if let dot = videoPath[slash...].lastIndex(of: "."), dot != slash {
            return String(videoPath[..<dot]) + ".pts"
        }
        return videoPath + ".pts"
    }

    func append(presentationNanoseconds: UInt64) {
        let start = first ?? presentationNanoseconds
        first = start
        let micros = (presentationNanoseconds - start) / 1000
        text += micros.decimalText(places: 3) + "\n"
    }

    /// Writes the sidecar beside the video, through a temporary name like the video itself.
    func save() throws {
        let temporary = path + ".partial"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OutputError(.unwritable, "cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let ok = text.utf8.withContiguousStorageIfAvailable { write(fd, $0.baseAddress, $0.count) == $0.count } ?? false
        guard ok, fsync(fd) == 0, rename(temporary, path) == 0 else {
            let reason = errno == ENOSPC ? "disk full" : String(cString: strerror(errno))
            unlink(temporary)
            throw OutputError(errno == ENOSPC ? .diskFull : .unwritable, "cannot write \(path): \(reason)")
        }
    }
}
