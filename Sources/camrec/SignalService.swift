import Glibc
import Logging
import Threading
import ServiceLifecycle
import Synchronization

/// SIGINT, SIGTERM, SIGHUP and SIGUSR1, taken by the one service group a recording or a receiver runs in.
///
/// `main`'s first line installs a handler that writes each signal's number into a pipe and counts
/// interrupts, then blocks the signals in every thread (threads inherit the mask): a signal that comes
/// while camrec starts up waits in the pipe instead of killing it. This service reads the pipe. The first
/// SIGINT or SIGTERM starts the group's graceful shutdown, which stops its services in reverse order: the
/// recording (its files finished), then the HTTP server, then this service, so that a second signal
/// still arrives while files are finished. Every SIGINT and SIGTERM also goes to `onInterrupt` with its
/// count; SIGHUP and SIGUSR1 only to `onSignal`.
///
/// Not service-lifecycle's `UnixSignalsSequence`: its libdispatch sources see nothing sent before they
/// register, and `main` then waits in `sigsuspend` with no signal blocked (as an async `main`'s
/// `dispatch_main` did), so an early SIGTERM took its default action and ended camrec with an empty
/// `.partial` (HostileOptionsAndSignalsTests). A handler and a pipe have no such window; the handler
/// runs on the main thread.
struct SignalService: Service {
    static let watched: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGUSR1]

    /// Installs the handler and blocks the signals for this thread and every thread started after it.
    /// `main` does this first of all, while its thread is the only one.
    static func blockInAllThreads() {
        _ = signalPipe
        _ = interruptsReceived.load(ordering: .relaxed)
        for signal in watched {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signal in
                // Async-signal-safe: a lock-free counter and write(2), both set up before the handler.
                let saved = errno
                if signal == SIGINT || signal == SIGTERM { interruptsReceived.add(1, ordering: .relaxed) }
                var byte = UInt8(truncatingIfNeeded: signal)
                _ = write(signalPipe.write, &byte, 1)
                errno = saved
            }
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
        mask(SIG_BLOCK)
    }

    /// For commands with nothing to finish (inspect, devices, encoders): signals act as usual.
    static func unblock() {
        for signal in watched { Glibc.signal(signal, SIG_DFL) }
        mask(SIG_UNBLOCK)
    }

    private static func mask(_ how: Int32) {
        var set = sigset_t()
        sigemptyset(&set)
        for s in watched { sigaddset(&set, s) }
        pthread_sigmask(how, &set, nil)
    }

    /// SIGINTs and SIGTERMs since camrec started, those after the group ended included (the exit
    /// status of a run interrupted twice is 130 however late the second one came).
    static var interrupts: Int { interruptsReceived.load(ordering: .relaxed) }

    /// The group whose shutdown the first interrupt starts; set once the group exists.
    let group = GroupReference()
    /// Each SIGINT or SIGTERM and how many have come, this one included.
    let onInterrupt: @Sendable (_ count: Int) -> Void
    /// SIGHUP and SIGUSR1.
    let onSignal: @Sendable (Int32) -> Void

    func run() async {
        // The pipe is read on a thread of its own (a blocking read), which outlives the service: signals
        // after the group has ended are only counted.
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(64))
        WorkerThread(name: "signals") {
            var byte: UInt8 = 0
            while true {
                let count = read(signalPipe.read, &byte, 1)
                if count == 1 {
                    continuation.yield(Int32(byte))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            continuation.finish()
        }.start()
        var handled = 0
        for await signal in signals.cancelOnGracefulShutdown() {
            if signal == SIGHUP || signal == SIGUSR1 { onSignal(signal) }
            // Interrupts are taken from the handler's count, not from their bytes: a SIGTERM whose byte
            // a full pipe lost (a flood of SIGHUPs while camrec starts) still stops the recording.
            while handled < Self.interrupts {
                handled += 1
                onInterrupt(handled)
                if handled == 1 { await group.triggerGracefulShutdown() }
            }
        }
    }

    /// A late-bound reference: the group is made from its services, this one among them.
    final class GroupReference: Sendable {
        private let group = Mutex<ServiceGroup?>(nil)
        func set(_ group: ServiceGroup) { self.group.withLock { $0 = group } }
        func triggerGracefulShutdown() async { await group.withLock { $0 }?.triggerGracefulShutdown() }
    }
}

/// The handler's pipe: close-on-exec, and a write that never blocks (a full pipe loses the byte, not the count).
private let signalPipe: (read: Int32, write: Int32) = {
    var ends: [Int32] = [-1, -1]
    // Made on main's first line, before any thread could fork: no race for the close-on-exec flag.
    guard pipe(&ends) == 0 else { return (-1, -1) }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
    return (ends[0], ends[1])
}()

private let interruptsReceived = Atomic<Int>(0)

/// Runs `services` as camrec's one service group: the signal service first (it stops last), the rest in
/// the order they should start, the last of them the media work whose end ends the group.
func runServiceGroup(signals: SignalService, services: [any Service]) async {
    var configurations = [ServiceGroupConfiguration.ServiceConfiguration(service: signals)]
    for (index, service) in services.enumerated() {
        // The media work's end (its frames recorded, or a failure) ends the group; a helper's (the HTTP
        // server's) does not end the recording.
        let ends: ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior = index == services.count - 1 ? .gracefullyShutdownGroup : .ignore
        configurations.append(.init(service: service, successTerminationBehavior: ends, failureTerminationBehavior: ends))
    }
    var quiet = Logger(label: "camrec.services")
    quiet.logLevel = .critical
    // No signals of its own: the signal service asks for the shutdown, and a second signal must not cancel.
    let group = ServiceGroup(configuration: .init(services: configurations, gracefulShutdownSignals: [], logger: quiet))
    signals.group.set(group)
    try? await group.run()
}
