import ArgumentParser
import Glibc

/// `camrec trigger`: starts or extends an event in a camrec that is recording, from a script on the same
/// machine, with no port open: SIGUSR1 to the camrec found by its camera or its pid file.
struct TriggerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trigger",
        abstract: "Start or extend an event in a running camrec (one recording with --event-output), as SIGUSR1 does.",
        discussion: """
        The camrec is found by the camera it records (it holds the device's lock; default /dev/video0) or by \
        the file it wrote with --pid-file. The event starts at the newest frame camrec has encoded when the \
        signal arrives; camrec says "event N started" on its own stderr. For a label, use POST /api/events \
        on its --http address.

        EXIT STATUS
          0  the trigger was sent
         64  usage error
         69  not allowed to signal that camrec (run as its user, or as root)
         78  no camrec is recording that device, or the pid file names none
        """
    )

    @Option(help: ArgumentHelp("The camera the camrec records (a /dev/v4l/by-id/… link works too); default /dev/video0.", valueName: "DEVICE"))
    var device: String?

    @Option(help: ArgumentHelp("The file that camrec wrote with --pid-file FILE.", valueName: "FILE"))
    var pidFile: String?

    func validate() throws {
        if device != nil && pidFile != nil { throw ValidationError("give --device or --pid-file, not both") }
    }

    func run() throws {
        let target: RunningRecorder
        let name: String
        do {
            if let pidFile {
                target = try RunningRecorder.named(byPidFile: pidFile)
                name = "--pid-file \(pidFile)"
            } else {
                let device = self.device ?? "/dev/video0"
                target = try RunningRecorder.recording(device: device)
                name = device
            }
        } catch {
            printError("\(error)")
            throw ReportedFailure(status: .noRecording)
        }
        guard kill(target.pid, SIGUSR1) == 0 else {
            let reason = errno
            printError("cannot signal camrec pid \(target.pid) (\(name)): \(String(cString: strerror(reason)))\(reason == EPERM ? "; run camrec trigger as the user camrec runs as, or as root" : "")")
            throw ReportedFailure(status: reason == EPERM ? .permissionDenied : .noRecording)
        }
        printLine("camrec: event trigger sent to camrec pid \(target.pid) (\(name))")
    }
}
