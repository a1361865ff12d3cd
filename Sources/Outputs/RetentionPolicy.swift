import Glibc

/// Which old files of a recording's pattern to delete: at most `maximumFiles` on disk (counting the
/// one being written), none older than `maximumAgeSeconds`. Only names the pattern produces are ever
/// considered, so nothing else in the directory is touched.
public struct RetentionPolicy: Sendable {
    public var maximumFiles: Int?
    public var maximumAgeSeconds: Double?

    public init(maximumFiles: Int? = nil, maximumAgeSeconds: Double? = nil) {
        self.maximumFiles = maximumFiles
        self.maximumAgeSeconds = maximumAgeSeconds
    }

    public var isActive: Bool { maximumFiles != nil || maximumAgeSeconds != nil }

    /// Parses `90s`, `30m`, `12h`, `7d` or plain seconds.
    public static func parseDuration(_ text: String) -> Double? {
        guard let last = text.last else { return nil }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        if let unit = units[last], let value = Double(text.dropLast()), value > 0 { return value * unit }
        if let value = Double(text), value > 0 { return value }
        return nil
    }

    /// Deletes what the policy says must go; returns the paths deleted.
    /// - Parameter current: the file being written now, never deleted.
    @discardableResult
    public func apply(pattern: OutputNamePattern, device: String, current: String?, now: time_t = time(nil)) -> [String] {
        let candidates = pattern.existingFiles(device: device)
            .filter { $0.path != current }
            .map { (path: $0.path, mtime: $0.modifiedSeconds) }
        var doomed = Set<String>()
        if let age = maximumAgeSeconds {
            for c in candidates where Double(now - c.mtime) > age { doomed.insert(c.path) }
        }
        if let maximum = maximumFiles {
            let keepFinished = max(0, maximum - (current == nil ? 0 : 1))
            let excess = candidates.count - keepFinished
            if excess > 0 { for c in candidates.prefix(excess) { doomed.insert(c.path) } }
        }
        var deleted: [String] = []
        for c in candidates where doomed.contains(c.path) {
            if unlink(c.path) == 0 {
                deleted.append(c.path)
                unlink(TimestampsFile.sidecarPath(for: c.path))
            }
        }
        return deleted
    }
}
