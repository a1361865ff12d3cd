import Glibc
import Pipeline

/// Turns SIGINT, SIGTERM, SIGHUP and SIGUSR1 into calls on a thread of their own.
///
/// The signals are blocked in every thread (set before any thread starts, so
/// all inherit the mask) and taken with sigwait, which avoids async-signal
/// restrictions altogether.
final class SignalWatcher: @unchecked Sendable {
    private let signals: [Int32] = SignalWatcher.watched
    static let watched: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGUSR1]

    /// Blocks the signals for this thread and every thread started after it. `main` does this
    /// first of all, so a SIGTERM that comes while camrec starts up waits for the watcher
    /// instead of killing the process (and leaving an empty `.partial` behind).
    static func blockInAllThreads() { mask(SIG_BLOCK) }

    /// For commands with nothing to finish (inspect, devices, encoders): signals act as usual.
    static func unblock() { mask(SIG_UNBLOCK) }

    func blockInAllThreads() { Self.blockInAllThreads() }

    private static func mask(_ how: Int32) {
        var set = sigset_t()
        sigemptyset(&set)
        for s in watched { sigaddset(&set, s) }
        pthread_sigmask(how, &set, nil)
    }

    /// Starts the watcher; `handler` gets each signal number, on the watcher's thread.
    func start(_ handler: @escaping @Sendable (Int32) -> Void) {
        let signals = self.signals
        let thread = WorkerThread(name: "signals") {
            var set = sigset_t()
            sigemptyset(&set)
            for s in signals { sigaddset(&set, s) }
            while true {
                var received: Int32 = 0
                if sigwait(&set, &received) == 0 { handler(received) }
            }
        }
        thread.start()
    }
}
