import Glibc

/// `--pid-file FILE`: this camrec's process id, for `camrec trigger --pid-file`, systemd's `PIDFile=`
/// and scripts. Written whole or not at all (a temporary file renamed over the name), refused when it
/// names another camrec that is still running, and removed at the end only if it still names this one.
struct PidFile {
    let path: String
    let pid = getpid()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func write(_ path: String) throws -> PidFile {
        let file = PidFile(path: path)
        if let other = try? RunningRecorder.named(byPidFile: path), other.pid != file.pid {
            throw Failure(description: "--pid-file \(path) names camrec pid \(other.pid), which is still running: give each recording its own pid file")
        }
        // Only a regular file (or nothing) is replaced: renamed over /dev/null, a FIFO or a socket, the
        // pid file would take that name's place (as root, /dev/null itself).
        var status = stat()
        if lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            throw Failure(description: "--pid-file \(path) exists and is not a regular file: give a file name such as /run/camrec/door.pid")
        }
        let temporary = "\(path).\(file.pid).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw Failure(description: "--pid-file \(path): cannot write it: \(String(cString: strerror(errno)))")
        }
        let text = Array("\(file.pid)\n".utf8)
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let closed = close(fd)
        guard written == text.count, closed == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(description: "--pid-file \(path): cannot write it: \(reason)")
        }
        return file
    }

    /// Removes the file if it still holds this process's id (another camrec may have taken the name since).
    func remove() {
        guard let named = try? RunningRecorder.named(byPidFile: path), named.pid == pid else { return }
        unlink(path)
    }
}
