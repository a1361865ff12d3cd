import Glibc
import Threading

/// Runs a user's command (`--on-camera-change`, `--on-event-end`) through /bin/sh without waiting for
/// it. What happened reaches it in environment variables, never in the command line, so nothing from
/// outside (a label, a file name) is ever parsed by the shell. The child starts with no signal blocked
/// (camrec blocks the ones its watcher takes), so SIGTERM from systemd or Ctrl-C reaches it.
func runHookCommand(_ command: String, option: String, variables: [String: String]) {
    var environment = [String: String]()
    var entry = environ
    while let pointer = entry.pointee {
        let pair = String(cString: pointer)
        if let equals = pair.firstIndex(of: "=") {
            environment[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        entry += 1
    }
    for (name, value) in variables { environment[name] = value }
    let arguments = ["/bin/sh", "-c", command]
    let argv = arguments.map { strdup($0) } + [nil]
    // A value with a NUL cannot be passed; none of camrec's has one (labels are printable).
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    var watched = sigset_t()
    sigemptyset(&watched)
    for signal in SignalService.watched { sigaddset(&watched, signal) }
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &watched)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let status = posix_spawn(&pid, "/bin/sh", nil, &attributes, argv, envp)
    guard status == 0 else {
        writeStandardError("camrec: \(option): cannot start /bin/sh: \(String(cString: strerror(status)))\n")
        return
    }
    // Reaped on a thread of its own, so a slow command never holds up the capture thread.
    let child = pid
    let reaper = WorkerThread(name: "hook-command") {
        var ignored: Int32 = 0
        _ = waitpid(child, &ignored, 0)
    }
    reaper.start()
    reaper.detach()
}
