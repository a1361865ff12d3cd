import Glibc

/// Small reads of the file system, sysfs and procfs, shared by those that look up devices there
/// (cameras, render nodes, microphones), walk a recording folder, or read what the kernel says of a
/// process: a directory's entries, an attribute's first line, a file's text, a link resolved.
public enum SystemFiles {
    /// One name in a directory, and whether the directory says it is one itself (`d_type`: a file
    /// system that does not say gives false, so a caller that cares `lstat`s what it finds).
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var isDirectory: Bool
    }

    /// The names in `directory` (not `.` or `..`), in the directory's order; empty when it cannot be read.
    public static func entries(of directory: String) -> [String] {
        directoryEntries(of: directory).map(\.name)
    }

    /// The entries of `directory` (not `.` or `..`), in the directory's order; empty when it cannot be read.
    public static func directoryEntries(of directory: String) -> [Entry] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var found: [Entry] = []
        while let entry = readdir(dir) {
            let name = String(cArray: entry.pointee.d_name)
            if name != "." && name != ".." {
                found.append(Entry(name: name, isDirectory: entry.pointee.d_type == UInt8(DT_DIR)))
            }
        }
        return found
    }

    /// An attribute's first line (at most 256 bytes), trimmed; nil when it cannot be read.
    public static func firstLine(of path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 257)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        return String(cBuffer: line).trimmingWhitespace()
    }

    /// A file's text, at most `limit` bytes, read to its end (procfs files report a size of 0); nil
    /// when it cannot be opened.
    public static func text(of path: String, limit: Int = 1 << 20) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: 65536)
        var bytes: [UInt8] = []
        while bytes.count < limit {
            let n = read(fd, &chunk, min(chunk.count, limit - bytes.count))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The lines of a file's text (as `text(of:limit:)` reads it), without their line breaks ("\n",
    /// "\r\n": `Character.isNewline`); empty lines left out; nil when it cannot be opened.
    public static func lines(of path: String, limit: Int = 1 << 20) -> [Substring]? {
        text(of: path, limit: limit)?.split(whereSeparator: \.isNewline)
    }

    /// `path` with every link resolved; nil when it does not exist.
    public static func resolved(_ path: String) -> String? {
        var resolved = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard realpath(path, &resolved) != nil else { return nil }
        return String(cBuffer: resolved)
    }

    /// What the symbolic link at `path` points to, as written in the link (not resolved further);
    /// nil when it is not a link or cannot be read.
    public static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(cBuffer: buffer.prefix(n))
    }
}
