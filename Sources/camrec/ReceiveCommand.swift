import ArgumentParser
import Glibc
import Logging
import NetStream
import Outputs
import Threading
import Receiver
import Recorder
import Synchronization
import SystemSupport

/// `camrec receive`: takes a raw H.264 or H.265 stream over TCP, verifies it by decoding, stores it.
struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Receive a raw H.264 or H.265 stream over TCP (recognised from its first NAL unit), check every frame by decoding it, and save it.",
        discussion: """
        camrec receive tcp://CAMERA:PORT [OUTPUT]      connect to a sender (camrec --listen, or any raw H.264/H.265 TCP server);
                                                      reconnects when it goes away
        camrec receive --listen [HOST:]PORT [OUTPUT]  accept a sender that pushes (camrec ... tcp://THIS-HOST:PORT)

        OUTPUT is a file (written under a temporary name, moved into place at the end) or - for stdout
        (camrec receive tcp://cam:9982 - | ffplay -f h264 -); without OUTPUT the stream is only checked.
        Output starts at an IDR with SPS and PPS. Ctrl-C or SIGTERM ends it cleanly.
        """
    )

    @Option(help: ArgumentHelp("Accept a pushing sender on [HOST:]PORT instead of connecting.", valueName: "[HOST:]PORT"))
    var listen: String?

    @Option(parsing: .unconditional, help: "Stop after N frames.")
    var frames: Int?

    @Option(parsing: .unconditional, help: "Stop after this many seconds from the first frame.")
    var duration: Double?

    @Flag(help: "Replace an existing output file.")
    var overwrite = false

    @Option(help: ArgumentHelp("Write one line per frame with its latencies in microseconds (camrec senders only).", valueName: "file"))
    var latencyLog: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (debug shows libavcodec's messages).")
    var logLevel: Logger.Level = .notice

    @Argument(help: ArgumentHelp("tcp://HOST:PORT of the sender (not with --listen), then OUTPUT: a file, or - for stdout.",
                                 valueName: "source-and-output"))
    var arguments: [String] = []

    private func parsed() throws -> (StreamReceiver.Source, String?) {
        if let listen {
            guard arguments.count <= 1 else {
                throw ValidationError("with --listen give at most one OUTPUT, got \(arguments.joined(separator: " "))")
            }
            if let first = arguments.first, TCPEndpoint.looksLikeURL(first) {
                throw ValidationError("give either --listen or a tcp:// address to connect to, not both")
            }
            do {
                return (.listen(try TCPEndpoint(listenSpec: listen)), arguments.first)
            } catch {
                throw ValidationError("--listen \(error.description)")
            }
        }
        guard let first = arguments.first else {
            throw ValidationError("give the sender, e.g. camrec receive tcp://camera:9982 out.h264, or --listen PORT")
        }
        guard arguments.count <= 2 else { throw ValidationError("give one sender and at most one OUTPUT") }
        guard TCPEndpoint.looksLikeURL(first) else {
            throw ValidationError("\(first): the sender is a tcp://HOST:PORT address (or use --listen PORT)")
        }
        do {
            let endpoint = try TCPEndpoint(url: first)
            if endpoint.listen { return (.listen(endpoint), arguments.count > 1 ? arguments[1] : nil) }
            return (.connect(endpoint), arguments.count > 1 ? arguments[1] : nil)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func validate() throws {
        try OptionRange.check(frames, "--frames", in: 1...Int.max)
        try OptionRange.checkSeconds(duration, "--duration")
        let (_, output) = try parsed()
        if let output, TCPEndpoint.looksLikeURL(output) {
            throw ValidationError("OUTPUT is a file or -, not \(output)")
        }
    }

    func run() async throws {
        SignalService.blockInAllThreads()
        VideoDecoder.setLibraryLogging(verbose: logLevel <= .debug)
        let (source, output) = try parsed()
        let overwrite = self.overwrite
        let sink: @Sendable () -> ByteSink? = {
            output.map { $0 == "-" ? StandardOutputSink() as ByteSink : FileSink(path: $0, overwrite: overwrite) }
        }
        let statusShown = StatusLine.stderrIsTerminal && logLevel <= .notice
        let quiet = logLevel > .notice
        let log: NetworkEventLog = { message in
            guard !quiet else { return }
            writeStandardError((statusShown ? "\r\u{1B}[2K" : "") + "camrec: " + message + "\n")
        }
        var options = StreamReceiver.Options(source: source, maximumFrames: frames, maximumDurationSeconds: duration)
        options.idleTimeoutSeconds = 20
        options.latencyLogPath = latencyLog
        let receiver = StreamReceiver(options: options, sink: sink, log: log)
        let writesFile = output != nil && output != "-"
        // SIGINT and SIGTERM end cleanly (the group's shutdown stops the receiver); SIGHUP and SIGUSR1
        // mean nothing to a receiver (they used to end it with no file).
        let signals = SignalService(onInterrupt: { count in
            guard count == 2 else { return }
            // "Stop waiting", never "throw away": a file is finished with every whole frame
            // that arrived; stdout (perhaps a pipe nobody reads) is simply left.
            if !writesFile {
                writeStandardError("\ncamrec: interrupted twice; exiting\n")
                endProcess(ExitStatus.interrupted.rawValue)
            }
            writeStandardError("\ncamrec: interrupted twice; finishing the output with what has arrived\n")
            receiver.stop()
        }, onSignal: { _ in })
        // Sender, frames, fps, bitrate, decode errors, gaps, reconnects, latency.
        let status = statusShown
            ? StatusLine(sample: { [receiver] in (receiver.progress.frames, receiver.progress.bytes) }) { [receiver] rates in
                let p = receiver.progress
                let state = p.connected ? "from \(p.senderAddress ?? "?")" : "waiting for a sender"
                var text = "\(state)  frames \(p.frames)  \(rates.framesPerSecond.decimalText(places: 1)) fps  \(rates.megabitsPerSecond.decimalText(places: 1)) Mbit/s  "
                    + "decode errors \(p.decodeErrors)  gaps \(p.gaps)  reconnects \(p.reconnects)"
                if p.lastLatencyNanoseconds > 0 { text += "  latency \(LatencySamples.milliseconds(p.lastLatencyNanoseconds)) ms" }
                return text
            }
            : nil
        status?.start()
        await runServiceGroup(signals: signals, services: [receiver])
        let result: StreamReceiver.Result
        do {
            result = try receiver.finishedOutcome.get()
        } catch let error as OutputError {
            status?.stop()
            throw report(.output(error))
        } catch let error as ReceiverError {
            // Both are a place camrec was told to use and cannot: the status of an output that cannot be made.
            status?.stop()
            printError(error.message)
            throw ReportedFailure(status: .outputError)
        } catch {
            status?.stop()
            printError("\(error)")
            throw ReportedFailure(status: .encoderUnavailable)
        }
        status?.stop()
        let p = result.progress
        var fields = ["output=\(quotedField(result.outputPath ?? output ?? "none"))", "frames=\(p.frames)", "idr=\(p.idrFrames)",
                      "bytes=\(p.bytes)", "decoded=\(p.decodedFrames)", "decode_errors=\(p.decodeErrors)",
                      "gaps=\(p.gaps)", "reconnects=\(p.reconnects)"]
        if p.missingFrames > 0 { fields.append("missing=\(p.missingFrames)") }
        if p.skippedBeforeStart > 0 { fields.append("skipped_before_idr=\(p.skippedBeforeStart)") }
        if p.truncated > 0 { fields.append("truncated=\(p.truncated)") }
        if let median = result.arrivalLatency.percentile(50), let p99 = result.arrivalLatency.percentile(99) {
            fields.append("latency_median=\(LatencySamples.milliseconds(median))ms")
            fields.append("latency_p99=\(LatencySamples.milliseconds(p99))ms")
        }
        printLine("camrec: received " + fields.joined(separator: " "))
        if p.frames > 0 && p.timedFrames == 0 {
            // A bare stream (the sender's default) has no capture or send times to measure from.
            var line = "camrec: no latency figures: the sender sent no timing notes (start it with --timing-sei to get them)"
            if let latencyLog {
                unlink(latencyLog)
                line += "; \(latencyLog) not written"
            }
            printLine(line)
        }
        if let arrival = result.arrivalLatency.summary {
            var line = "camrec: latency capture to received \(arrival)"
            if let decoded = result.decodedLatency.summary { line += "; capture to decoded \(decoded)" }
            if let transfer = result.transferLatency.summary { line += "; send to received \(transfer)" }
            printLine(line)
        }
        if let error = result.outputError {
            throw report(.output(error))
        }
        if SignalService.interrupts > 1 { throw ReportedFailure(status: .interrupted) }
        if p.frames > 0 && (p.decodedFrames == 0 || p.decodeErrors >= p.frames) {
            printError("every one of the \(p.frames) frames received failed to decode (\(p.decodeErrors) decode errors); the file is kept, but the sender's stream is broken")
            throw ReportedFailure(status: .invalidInput)
        }
        if p.frames == 0 && p.garbageConnections + p.oversizedConnections > 0 {
            printError("nothing received was H.264 or H.265; check that the sender sends a raw Annex-B stream")
            throw ReportedFailure(status: .invalidInput)
        }
    }

    private func report(_ failure: RecordingFailure) -> ReportedFailure {
        printError(failure.description)
        return ReportedFailure(status: failure.exitStatus)
    }
}
