import Glibc
import SystemSupport

extension OutputNamePattern {
    /// A file on disk whose name this pattern produces.
    public struct ExistingFile: Sendable, Equatable {
        public var path: String
        public var bytes: Int
        public var modifiedSeconds: Int
    }

    /// The regular files under `fixedDirectory` whose names this pattern produces for `device`,
    /// oldest first. Symbolic links, FIFOs and devices are left out: camrec never wrote them.
    public func existingFiles(device: String) -> [ExistingFile] {
        var found: [ExistingFile] = []
        let root = fixedDirectory
        let depth = template.dropFirst(root == "." ? 0 : root.count).filter { $0 == "/" }.count
        Self.walk(root, depth: max(1, depth)) { path in
            let comparable = root == "." && !template.hasPrefix("./") ? String(path.dropFirst(2)) : path
            guard matches(comparable, device: device) else { return }
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return }
            found.append(ExistingFile(path: comparable, bytes: Int(st.st_size), modifiedSeconds: st.st_mtim.tv_sec))
        }
        found.sort { $0.modifiedSeconds != $1.modifiedSeconds ? $0.modifiedSeconds < $1.modifiedSeconds : $0.path < $1.path }
        return found
    }

    private static func walk(_ directory: String, depth: Int, _ visit: (String) -> Void) {
        guard depth > 0 else { return }
        for entry in SystemFiles.directoryEntries(of: directory) {
            let path = directory == "/" ? "/" + entry.name : directory + "/" + entry.name
            if entry.isDirectory {
                walk(path, depth: depth - 1, visit)
            } else {
                visit(path)
            }
        }
    }
}
