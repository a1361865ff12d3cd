import Hub
import Glibc
import SystemPackage

/// A recording file written under a temporary name beside its final one, then
/// fsync'd and moved into place when recording ends, so a half-written file never
/// carries the final name. An existing file is never replaced unless asked.
public final class FileSink: SeekableByteSink {
    public let path: String
    public let overwrite: Bool
    public var label: String { path }
    /// The name the file has while recording.
    public let temporaryPath: String

    private var descriptor: FileDescriptor?
    /// Where the file ends; a seek back (a container's header) does not move it.
    private var written = 0
    /// Where the next write lands.
    private var position = 0
    /// Bytes that end on an access-unit boundary: a later failed write is cut back to here.
    private var committed = 0

    public init(path: String, overwrite: Bool) {
        self.path = path
        self.overwrite = overwrite
        let file = FilePath(path)
        let name = file.lastComponent?.string ?? "recording"
        let directory = file.removingLastComponent()
        temporaryPath = directory.appending(Self.temporaryName(for: name)).string
    }

    /// `NAME.camrec-PID.partial`; for a name near the 255-byte limit the front of the name, so
    /// every name that can exist can also be recorded to.
    static func temporaryName(for name: String) -> String {
        let suffix = ".camrec-\(getpid()).partial"
        let room = Int(NAME_MAX) - suffix.utf8.count
        guard name.utf8.count > room else { return name + suffix }
        var front = Substring(name)
        while front.utf8.count > room { front = front.dropLast() }  // whole characters only
        return front + suffix
    }

    /// What kind of thing `path` names when it is neither absent nor a regular file or a
    /// directory: camrec never replaces those, `--overwrite` or not.
    static func specialFileKind(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFREG, S_IFDIR: return nil
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }

    public func open() throws {
        let file = FilePath(path)
        let directory = file.removingLastComponent().isEmpty ? "." : file.removingLastComponent().string
        var st = stat()
        if stat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw OutputError(.unwritable, "output \(path) is a directory; give a file name such as \(path)/out.h264")
            }
            if let kind = Self.specialFileKind(path) {
                throw OutputError(.unwritable, "output \(path) is \(kind), not a regular file; camrec only ever replaces "
                    + "regular files: give a file name (to feed a pipe or device, record to - and redirect stdout)")
            }
            if !overwrite {
                throw OutputError(.exists, "output \(path) already exists; pass --overwrite to replace it, or choose another name")
            }
        }
        try Self.makeDirectories(directory)
        do {
            descriptor = try FileDescriptor.open(FilePath(temporaryPath), .writeOnly,
                                                 options: [.create, .exclusiveCreate, .closeOnExec],
                                                 permissions: [.ownerReadWrite, .groupRead, .otherRead],
                                                 retryOnInterrupt: true)
        } catch let error as Errno {
            switch error {
            case .permissionDenied, .readOnlyFileSystem:
                throw OutputError(.unwritable, "cannot write in \(directory): \(error.description.lowercased()); choose a writable directory")
            case .noSpace:
                throw OutputError(.diskFull, "no space left in \(directory); free some space or record elsewhere")
            default:
                throw OutputError(.unwritable, "cannot create \(temporaryPath): \(error)")
            }
        }
    }

    /// Creates `directory` and its missing parents, as `mkdir -p` does.
    static func makeDirectories(_ directory: String) throws {
        var st = stat()
        if stat(directory, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                throw OutputError(.unwritable, "output directory \(directory) is a file, not a directory; choose another path")
            }
            return
        }
        let parent = FilePath(directory).removingLastComponent()
        if !parent.isEmpty && parent.string != directory { try makeDirectories(parent.string) }
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            let error = Errno(rawValue: errno)
            throw OutputError(error == .noSpace ? .diskFull : .unwritable,
                              "cannot create output directory \(directory): \(error.description.lowercased()); choose a writable place")
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard let descriptor else { return }
        do {
            var offset = 0
            while offset < bytes.count {
                offset += try descriptor.write(UnsafeRawBufferPointer(rebasing: bytes[offset...]), retryOnInterrupt: true)
            }
            position += bytes.count
            written = max(written, position)
        } catch let error as Errno {
            if error == .noSpace || error == .diskQuotaExceeded {
                throw OutputError(.diskFull, "disk full writing \(path) after \(committed) bytes; "
                    + "the frames before are saved; free some space")
            }
            throw OutputError(.unwritable, "writing \(path) failed: \(error)")
        }
    }

    public var size: Int { written }

    public func seek(to offset: Int) throws -> Int {
        guard let descriptor else { return 0 }
        guard offset >= 0, offset <= written else {
            throw OutputError(.unwritable, "seeking \(path) to byte \(offset) of \(written) is outside the file")
        }
        do {
            position = Int(try descriptor.seek(offset: Int64(offset), from: .start))
        } catch let error as Errno {
            throw OutputError(.unwritable, "seeking in \(path) failed: \(error)")
        }
        return position
    }

    public func commitBoundary() {
        committed = written
    }

    public func close(keep: Bool) throws -> String? {
        guard let descriptor else { return nil }
        self.descriptor = nil
        defer { try? descriptor.close() }
        guard keep else {
            unlink(temporaryPath)
            return nil
        }
        // A failed write may have left part of an access unit (its byte count never reached
        // `written`): cut back to the last whole one. Cheap, so done always.
        _ = ftruncate(descriptor.rawValue, off_t(committed))
        _ = fsync(descriptor.rawValue)
        try moveIntoPlace()
        let directory = FilePath(path).removingLastComponent()
        syncDirectory(directory.isEmpty ? "." : directory.string)
        return path
    }

    private func moveIntoPlace() throws {
        if access(temporaryPath, F_OK) != 0 {
            // The directory (or the file) was removed while recording: nothing is left to keep.
            throw OutputError(.unwritable, "\(temporaryPath) is gone (was its directory removed while recording?); "
                + "the frames written to it are lost")
        }
        if let kind = Self.specialFileKind(path) {
            throw OutputError(.exists, "\(path) became \(kind) while recording; the recording is kept as \(temporaryPath)")
        }
        if overwrite {
            guard rename(temporaryPath, path) == 0 else {
                throw OutputError(.unwritable, "could not move \(temporaryPath) to \(path): \(Errno(rawValue: errno)); the recording is saved under the temporary name")
            }
            return
        }
        // link() fails if the name was taken meanwhile, so nothing is ever replaced.
        if link(temporaryPath, path) == 0 {
            unlink(temporaryPath)
            return
        }
        let linkError = Errno(rawValue: errno)
        if linkError == .fileExists {
            throw OutputError(.exists, "\(path) appeared while recording; the recording is kept as \(temporaryPath)")
        }
        // Filesystems without hard links (vfat on SD cards): check, then rename.
        var st = stat()
        if stat(path, &st) == 0 {
            throw OutputError(.exists, "\(path) appeared while recording; the recording is kept as \(temporaryPath)")
        }
        guard rename(temporaryPath, path) == 0 else {
            throw OutputError(.unwritable, "could not move \(temporaryPath) to \(path): \(Errno(rawValue: errno)); the recording is saved under the temporary name")
        }
    }

    private func syncDirectory(_ directory: String) {
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        Glibc.close(fd)
    }
}
