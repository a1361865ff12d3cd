import Glibc

/// Small reads of sysfs and procfs, shared by those that look up devices there (cameras, render nodes,
/// microphones): a directory's entries, an attribute's first line, a file's text, a link resolved.
public enum SystemFiles {
    /// The names in `directory` (not `.` or `..`), in no order; empty when it cannot be read.
    public static func entries(of directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// An attribute's first line (at most 256 bytes), trimmed; nil when it cannot be read.
    public static func firstLine(of path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 257)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        return String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmingWhitespace()
    }

    /// A file's text, at most `limit` bytes; nil when it cannot be read.
    public static func text(of path: String, limit: Int = 1 << 20) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let got = fread(&chunk, 1, min(chunk.count, limit - bytes.count), file)
            if got == 0 { break }
            bytes += chunk[..<got]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `path` with every link resolved; nil when it does not exist.
    public static func resolved(_ path: String) -> String? {
        var resolved = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard realpath(path, &resolved) != nil else { return nil }
        return String(decoding: resolved.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
