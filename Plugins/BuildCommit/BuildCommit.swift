import Foundation
import PackagePlugin

/// Writes `let buildCommit = "…"` (the checkout's commit, `+changes` when its files differ from it,
/// `unknown` outside git) for `camrec --version`, before each build. The file is rewritten only when
/// that changes, so an unchanged checkout rebuilds nothing.
@main
struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = #"""
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
            if [ "$commit" != unknown ] && ! git -C "$1" diff --quiet HEAD -- 2>/dev/null; then commit="$commit+changes"; fi
            mkdir -p "$2"
            line="let buildCommit = \"$commit\""
            [ "$(cat "$2/BuildCommit.swift" 2>/dev/null)" = "$line" ] || printf '%s\n' "$line" > "$2/BuildCommit.swift"
            """#
        return [.prebuildCommand(displayName: "camrec's git commit", executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path],
                                 outputFilesDirectory: output)]
    }
}
