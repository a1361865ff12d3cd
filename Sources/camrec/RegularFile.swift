import Glibc
import SystemPackage

struct FileReadError: Error, CustomStringConvertible {
    let description: String
}

/// The whole of a regular file of at most `limit` bytes. Anything else is refused before it is read:
/// a FIFO or a device would block or never end.
func readRegularFile(_ path: String, limit: Int) throws -> [UInt8] {
    let file: FileDescriptor
    do {
        file = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking, .closeOnExec], retryOnInterrupt: true)
    } catch let error as Errno {
        throw FileReadError(description: "cannot read it: \(error)")
    }
    defer { try? file.close() }
    var status = stat()
    guard fstat(file.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
        throw FileReadError(description: "not a regular file")
    }
    guard status.st_size <= limit else {
        throw FileReadError(description: "\(status.st_size) bytes, more than the \(limit) allowed")
    }
    var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
    var count = 0
    // The size was taken before reading: a file that grows meanwhile is read to that size, no further.
    while count < bytes.count {
        let n = try bytes.withUnsafeMutableBytes { buffer in
            try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]), retryOnInterrupt: true)
        }
        guard n > 0 else { break }
        count += n
    }
    return Array(bytes.prefix(count))
}
