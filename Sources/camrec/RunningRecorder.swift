import SystemSupport
import Glibc

/// A camrec that is recording, found by what it holds: a camera's exclusive lock (camrec `flock`s the
/// V4L2 device it opens; the kernel lists every lock in /proc/locks with its holder) or its `--pid-file`.
/// Either way the process must be camrec: a stale pid file, or another program that locks the device,
/// is never signalled.
struct RunningRecorder {
    let pid: pid_t

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    /// The camrec holding the lock on the device at `path` (symbolic links such as /dev/v4l/by-id/… followed).
    static func recording(device path: String, locks: String? = nil) throws -> RunningRecorder {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw Missing(description: "\(path): \(String(cString: strerror(errno))); give the camera camrec records (--device) or its --pid-file")
        }
        let holders = lockHolders(device: status.st_dev, inode: status.st_ino, locks: locks ?? SystemFiles.text(of: "/proc/locks", limit: 4 << 20) ?? "")
        guard !holders.isEmpty else {
            throw Missing(description: "no process is recording \(path) (nothing holds its lock); is camrec running, and on this camera?")
        }
        for pid in holders where isCamrec(pid) { return RunningRecorder(pid: pid) }
        let names = holders.map { "pid \($0) (\(command(of: $0) ?? "gone"))" }.joined(separator: ", ")
        throw Missing(description: "\(path) is held by \(names), which is not camrec")
    }

    /// The camrec whose pid `path` holds, as `camrec --pid-file` writes it.
    static func named(byPidFile path: String) throws -> RunningRecorder {
        let bytes: [UInt8]
        do { bytes = try readRegularFile(path, limit: 64) } catch {
            throw Missing(description: "--pid-file \(path): \(error); is camrec running with --pid-file \(path)?")
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
        guard let pid = pid_t(text), pid > 0 else {
            throw Missing(description: "--pid-file \(path) holds no process id")
        }
        guard isCamrec(pid) else {
            throw Missing(description: "--pid-file \(path) names pid \(pid), which is \(command(of: pid).map { "\($0), not camrec" } ?? "not running") (a camrec that ended without removing it)")
        }
        return RunningRecorder(pid: pid)
    }

    /// The processes holding a lock on the file (`device`, `inode`), from /proc/locks' text: lines like
    /// `1: FLOCK  ADVISORY  WRITE 1234 00:05:567 0 EOF` (the file's device as hex major:minor, then its
    /// inode). A waiter's line (`1: -> FLOCK …`) has one field more, so it never matches.
    static func lockHolders(device: dev_t, inode: ino_t, locks: String) -> [pid_t] {
        let major = UInt64((device >> 8) & 0xfff) | UInt64((device >> 32) & ~0xfff)
        let minor = UInt64(device & 0xff) | UInt64((device >> 12) & ~0xff)
        var pids: [pid_t] = []
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6 else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3, let fileMajor = UInt64(file[0], radix: 16), let fileMinor = UInt64(file[1], radix: 16),
                  let fileInode = UInt64(file[2]), fileMajor == major, fileMinor == minor, fileInode == UInt64(inode),
                  let pid = pid_t(fields[4]), pid > 0, !pids.contains(pid) else { continue }
            pids.append(pid)
        }
        return pids
    }

    /// Whether `pid` runs camrec: its name is camrec, or it runs this very executable under another name.
    static func isCamrec(_ pid: pid_t) -> Bool {
        if command(of: pid) == "camrec" { return true }
        guard let theirs = SystemFiles.linkTarget("/proc/\(pid)/exe"), let ours = SystemFiles.linkTarget("/proc/self/exe") else { return false }
        return theirs == ours
    }

    /// The process's name (/proc/PID/comm), or nil when it is gone.
    static func command(of pid: pid_t) -> String? {
        SystemFiles.text(of: "/proc/\(pid)/comm", limit: 64)?.trimmingWhitespace()
    }
}
