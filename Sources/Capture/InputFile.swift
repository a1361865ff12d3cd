import Glibc
import SystemPackage

/// The file behind `--input` (or standard input for "-"), opened for reading, with the one-line errors
/// every file source gives: missing, unreadable, a directory.
struct InputFile {
    let descriptor: FileDescriptor
    /// False for standard input, which is not ours to close.
    let ownsDescriptor: Bool

    /// - Parameter kind: what the file should hold, for the directory error ("a raw-frame file").
    init(path: String, kind: String) throws {
        if path == "-" {
            descriptor = .standardInput
            ownsDescriptor = false
            return
        }
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        } catch let error as Errno {
            switch error {
            case .noSuchFileOrDirectory:
                throw CaptureError(.sourceMissing, "input file \(path) does not exist; check the path given to --input")
            case .permissionDenied:
                throw CaptureError(.permissionDenied, "cannot read input file \(path): permission denied")
            default:
                throw CaptureError(.sourceMissing, "cannot open input file \(path): \(error)")
            }
        }
        ownsDescriptor = true
        var st = stat()
        if fstat(descriptor.rawValue, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            try? descriptor.close()
            throw CaptureError(.invalidInput, "input \(path) is a directory, not \(kind)")
        }
    }
}
