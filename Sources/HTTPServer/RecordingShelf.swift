import SystemSupport
import Glibc
import Hummingbird
import Outputs

/// The recordings the page lists (`/api/recordings`) and serves (`/recordings/N/NAME`): only
/// regular files whose names a file output's pattern produces, found under that output's own
/// directory. A request names a file; it is served only if that exact name is on the list, and
/// only if, opened without following a final symbolic link, it is a regular file whose real path
/// still lies inside the output's real directory. Nothing else on disk can be reached or listed.
public struct RecordingShelf: Sendable {
    /// One file output: its name pattern and the files it finished in this run (which know their duration).
    public struct Shelf: Sendable {
        public var pattern: OutputNamePattern
        public var device: String
        public var finished: @Sendable () -> [FinishedFile]
        public init(pattern: OutputNamePattern, device: String, finished: @escaping @Sendable () -> [FinishedFile]) {
            self.pattern = pattern
            self.device = device
            self.finished = finished
        }
    }

    public struct Recording: ResponseEncodable, Sendable {
        /// The name relative to its output's directory, as the URL carries it.
        public var name: String
        public var url: String
        public var bytes: Int
        public var modifiedSeconds: Int
        /// Known for files this run finished.
        public var durationSeconds: Double?
        public var frames: Int?
        public var contentType: String
        /// MP4 and QuickTime play in the page's `<video>`; everything else downloads.
        public var playsInPage: Bool
    }

    struct Listing: ResponseEncodable {
        var recordings: [Recording]
    }

    let shelves: [Shelf]

    public init(shelves: [Shelf]) {
        self.shelves = shelves
    }

    /// Every recording on every shelf, newest first.
    func list() -> [Recording] {
        var all: [Recording] = []
        for (index, shelf) in shelves.enumerated() {
            let finished = Dictionary(shelf.finished().map { ($0.path, $0) }, uniquingKeysWith: { $1 })
            let root = shelf.pattern.fixedDirectory
            for file in shelf.pattern.existingFiles(device: shelf.device) {
                let name = Self.relative(file.path, to: root)
                let type = Self.contentType(of: name)
                all.append(Recording(name: name, url: "/recordings/\(index)/" + Self.percentEncoded(name), bytes: file.bytes,
                                     modifiedSeconds: file.modifiedSeconds, durationSeconds: finished[file.path]?.durationSeconds,
                                     frames: finished[file.path]?.frames, contentType: type,
                                     playsInPage: type == "video/mp4" || type == "video/quicktime"))
            }
        }
        return all.sorted { $0.modifiedSeconds != $1.modifiedSeconds ? $0.modifiedSeconds > $1.modifiedSeconds : $0.url < $1.url }
    }

    /// A listed file, opened for reading; nil for anything else.
    func open(shelfIndex: Int, name: String) -> (descriptor: Int32, bytes: Int, contentType: String)? {
        guard shelves.indices.contains(shelfIndex) else { return nil }
        let shelf = shelves[shelfIndex]
        let root = shelf.pattern.fixedDirectory
        guard let file = shelf.pattern.existingFiles(device: shelf.device).first(where: { Self.relative($0.path, to: root) == name })
        else { return nil }
        // O_NOFOLLOW: a name swapped for a symlink since the listing fails; O_NONBLOCK: so does a FIFO.
        let fd = Glibc.open(file.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG,
              let realRoot = Self.realPath(root), let realFile = Self.realPath(file.path),
              realFile.hasPrefix(realRoot == "/" ? "/" : realRoot + "/")
        else {
            close(fd)
            return nil
        }
        return (fd, Int(st.st_size), Self.contentType(of: name))
    }

    static func relative(_ path: String, to root: String) -> String {
        if root == "." { return path.hasPrefix("./") ? String(path.dropFirst(2)) : path }
        let prefix = root == "/" ? "/" : root + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }

    static func realPath(_ path: String) -> String? { SystemFiles.resolved(path) }

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last?.lowercased() {
        case "mp4", "m4v": "video/mp4"
        case "mov": "video/quicktime"
        case "mkv": "video/x-matroska"
        case "ts", "m2ts": "video/mp2t"
        case "h264", "264": "video/h264"
        default: "application/octet-stream"
        }
    }

    /// Every byte but unreserved ones and `/` as `%XX`.
    static func percentEncoded(_ name: String) -> String {
        var out = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// `%XX` decoded once; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                  let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
