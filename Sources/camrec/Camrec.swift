import ArgumentParser
import Glibc
import Libav
import Recorder

/// `camrec`: records by default; `inspect` checks a stream.
struct Camrec: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "camrec",
        abstract: "Record H.264 or H.265 from a camera, a test pattern or raw frames, with a stream any player can join at any IDR.",
        discussion: """
        Every stream camrec writes has 4-byte start codes on every NAL unit and SPS+PPS before every IDR.

        EXIT STATUS
        \(ExitStatus.table)
        """,
        version: versionLine,
        subcommands: [RecordCommand.self, InspectCommand.self, DevicesCommand.self, EncodersCommand.self, ReceiveCommand.self, TriggerCommand.self],
        defaultSubcommand: RecordCommand.self
    )
}

/// camrec's version and the commit it was built from.
let versionLine = "camrec 0.1.0 (commit \(buildCommit))"

/// `camrec --version`: the version line, then the media libraries it runs with. Asked for only when
/// printed: naming FFmpeg's versions loads libavcodec, which a recording may never need.
func versionText() -> String { ([versionLine] + LibraryVersions.lines).joined(separator: "\n") }

/// A failure already reported on stderr; only its exit status is left to give.
struct ReportedFailure: Error {
    let status: ExitStatus
}

@main
enum Main {
    /// The signal mask is set on the first line, while the main thread is the only one (the runtime
    /// starts its pool on demand). The command runs as a task (a recording and a receiver run as one
    /// service group) and the main thread waits for it: Swift's async main would end in dispatch_main(),
    /// whose pthread_exit unwinds the main thread through .eh_frame, and that one unwind kept 0.6 MiB of
    /// the binary resident (docs/PERFORMANCE.md). The command ends the process itself, with its status.
    static func main() {
        SignalService.blockInAllThreads()
        // Broken pipes are errors to report, not a reason to die silently.
        signal(SIGPIPE, SIG_IGN)
        Task.detached { await runCommand() }
        // The signals are taken here, on the main thread, by SignalService's handler: sigsuspend unblocks
        // them only while it waits, as dispatch_main did.
        var none = sigset_t()
        sigemptyset(&none)
        while true { sigsuspend(&none) }
    }

    private static func runCommand() async -> Never {
        do {
            var command = try Camrec.parseAsRoot()
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let failure as ReportedFailure {
            endProcess(failure.status.rawValue)
        } catch {
            let code = Camrec.exitCode(for: error)
            if code == .success {
                let message = Camrec.fullMessage(for: error)
                print(message == versionLine ? versionText() : message)
                endProcess(0)
            }
            // One line, not ArgumentParser's usage block: cron mail and scripts read it.
            let message = Camrec.message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid usage"
            printError("\(message) (see 'camrec --help')")
            endProcess(code == .validationFailure ? ExitStatus.usage.rawValue : code.rawValue)
        }
        endProcess(0)
    }
}

/// Ends camrec with `status` once its work is done, without exit()'s library destructors. A service
/// group's child task is destroyed on a pool thread after the group has returned, and with it the last
/// reference to a recording: its encoder's VA display can still be closing there (XCloseDisplay) while
/// exit() unloads libXext under it, which crashed camrec after its last line (SIGSEGV in
/// XextRemoveDisplay, vaapi-host in CI 2026-11-29). Nothing camrec writes waits for an exit handler:
/// every file is finished before its command returns, and stdio is flushed here.
func endProcess(_ status: Int32) -> Never {
    fflush(nil)
    _exit(status)
}

/// One line on stderr, prefixed so it stands out in cron mail and logs.
func printError(_ message: String) {
    writeStandardError("camrec: error: \(message)\n")
}

func printLine(_ message: String) {
    writeStandardError(message + "\n")
}

/// Unbuffered, so lines from several threads never interleave mid-line.
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}
