import Bitstream
import Frames
import Glibc
import NIOCore
import NetStream
import Outputs
import Threading
import ServiceLifecycle
import Synchronization
import SystemPackage

extension StreamReceiver {
    /// One run of the receiver: what only its task touches (the output, the decoder, the latencies).
    final class Run {
        let receiver: StreamReceiver
        let sink: ByteSink?
        var options: Options { receiver.options }
        var log: NetworkEventLog { receiver.log }
        var stopping: Bool { receiver.stopping }
        var decoder: VideoDecoder?
        var arrivalLatency = LatencySamples()
        var decodedLatency = LatencySamples()
        var transferLatency = LatencySamples()
        var firstFrameTime: UInt64?
        var outputError: OutputError?
        var limitReached = false
        var latencyLog: UnsafeMutablePointer<FILE>?

        init(receiver: StreamReceiver, sink: ByteSink?) {
            self.receiver = receiver
            self.sink = sink
        }

        func receive() async throws -> Result {
            decoder = try VideoDecoder()
            var listener: SenderListener?
            if case .listen(let endpoint) = options.source {
                do {
                    listener = try SenderListener(endpoint: endpoint, idleTimeoutSeconds: options.idleTimeoutSeconds, log: log)
                } catch {
                    let hint = (error as? SocketError)?.errno == .addressInUse ? "; something else listens there: choose another port" : ""
                    throw ReceiverError(.cannotListen, "cannot listen on \(endpoint): \(error)\(hint)")
                }
                if !receiver.adopt(listener!) { listener!.close() }
                log("waiting for a sender on " + listener!.addresses.map { "tcp://\($0)" }.joined(separator: ", "))
            }
            try sink?.open()
            if let path = options.latencyLogPath {
                latencyLog = fopen(path, "w")
                if latencyLog == nil { throw ReceiverError(.latencyLogUnwritable, "cannot write the latency log \(path): \(lastErrnoText())") }
                fputs("# sequence capture_to_received_us capture_to_decoded_us send_to_received_us\n", latencyLog)
            }
            defer { if let latencyLog { fclose(latencyLog) } }
            let started = MonotonicClock.now()
            var backoff: UInt64 = 250_000_000
            var reported = false
            var arrivals = listener?.arrivals.makeAsyncIterator()
            senders: while !stopping && !limitReached && outputError == nil {
                let connection: SenderConnection
                switch options.source {
                case .connect(let endpoint):
                    do {
                        connection = try await SenderConnection.connect(host: endpoint.host ?? "localhost", port: endpoint.port,
                                                                        timeoutMilliseconds: 2000, idleTimeoutSeconds: options.idleTimeoutSeconds)
                    } catch {
                        if stopping { break senders }
                        if !reported { log("cannot reach the sender \(endpoint) (\(error)); retrying with backoff up to 5 s") }
                        reported = true
                        await pause(nanoseconds: backoff)
                        backoff = min(backoff * 2, 5_000_000_000)
                        continue
                    }
                case .listen:
                    // Ends when the listener closes (a stop).
                    guard let next = await arrivals?.next() else { break senders }
                    connection = next
                }
                reported = false
                guard receiver.adopt(connection) else {
                    connection.close()
                    break
                }
                let frames = await receive(from: connection, listener: listener)
                connection.close()
                _ = receiver.adopt(nil)
                if frames > 0 { backoff = 250_000_000 }
                if case .connect = options.source, !stopping, !limitReached, outputError == nil {
                    await pause(nanoseconds: backoff)
                    backoff = min(backoff * 2, 5_000_000_000)
                }
            }
            listener?.close()
            // A sender that came after the last one ended and was never taken is closed, not left open.
            while let untaken = await arrivals?.next() { untaken.close() }
            if let decoder {
                let tail = decoder.flush()
                receiver.shared.withLock { $0.decodedFrames += tail.frames }
            }
            let progress = receiver.progress
            var path: String?
            if let sink {
                do {
                    path = try sink.close(keep: progress.frames > 0)
                } catch {
                    outputError = outputError ?? (error as? OutputError ?? OutputError(.unwritable, "\(error)"))
                }
            }
            return Result(progress: progress, arrivalLatency: arrivalLatency, decodedLatency: decodedLatency,
                          transferLatency: transferLatency, outputPath: path, outputError: outputError,
                          durationSeconds: Double(MonotonicClock.now() - started) / 1e9)
        }

        /// Waits out a reconnect backoff, or less when stopped (`stop` cancels the task).
        private func pause(nanoseconds: UInt64) async {
            try? await Task.sleep(nanoseconds: nanoseconds)  // a backoff, not a poll: `stop` cancels it
        }

        /// One connection's worth of stream. Returns the frames written from it.
        private func receive(from connection: SenderConnection, listener: SenderListener?) async -> Int {
            let sender = connection.peerAddress
            let n = receiver.shared.withLock { p -> Int in
                p.connections += 1
                p.reconnects = max(0, p.connections - 1)
                p.connected = true
                p.senderAddress = sender
                return p.connections
            }
            log((listener == nil ? "connected to sender \(sender)" : "sender \(sender) connected") + (n > 1 ? " (connection #\(n))" : ""))
            defer { receiver.shared.withLock { $0.connected = false } }

            var session = Session()
            var bytes: [UInt8] = []
            var ending = ""
            do {
                try await connection.channel.executeThenClose { inbound, _ in
                    for try await buffer in inbound {
                        if stopping || limitReached || outputError != nil { return }
                        bytes.removeAll(keepingCapacity: true)
                        bytes.append(contentsOf: buffer.readableBytesView)
                        let now = MonotonicClock.now()
                        session.noteArrival(end: session.assembler.bytesConsumed + bytes.count, at: now)
                        for unit in session.assembler.append(bytes[...]) {
                            handle(unit, in: &session, sender: sender, position: .followed)
                            if limitReached || outputError != nil { break }
                        }
                        if let reason = session.garbageReason(limit: options.garbageLimitBytes) {
                            receiver.shared.withLock { $0.garbageConnections += 1 }
                            ending = "sender \(sender) is not sending H.264 or H.265: \(reason); disconnecting"
                            return
                        }
                        if let reason = session.oversizeReason(limitOverride: options.accessUnitLimitBytes) {
                            receiver.shared.withLock { $0.oversizedConnections += 1 }
                            ending = "sender \(sender) \(reason); disconnecting"
                            return
                        }
                    }
                    // The inbound stream ended: the sender's end, its silence, or a stop.
                    if stopping { return }
                    if connection.wentIdle {
                        ending = "sender \(sender) sent nothing for \(Int(options.idleTimeoutSeconds)) s; disconnecting"
                        return
                    }
                    handleEnd(of: &session, sender: sender, last: .lastBeforeEnd)
                    ending = "sender \(sender) ended the stream"
                }
            } catch {
                if !stopping {
                    // A reset leaves every access unit the next one followed; the last may be cut (camrec's
                    // sender resets a connection it gives up inside an access unit).
                    handleEnd(of: &session, sender: sender, last: .lastBeforeReset)
                    let reason = (error as? IOError).map { SocketError("recv", Errno(rawValue: $0.errnoCode), address: sender) as Error } ?? error
                    ending = "sender \(sender) went away (\(reason))"
                }
            }
            if ending.isEmpty {
                ending = stopping ? "stopped; closing the connection to \(sender)" : "closing the connection to \(sender)"
            }
            // The next sender may come before the line that says this one ended: one that waits for the
            // line to connect is taken, not refused.
            listener?.done()
            if session.frames > 0 || !stopping { log(ending + " after \(session.frames) frames") }
            return session.frames
        }

        /// The access units the end of a connection completes: all but the last were followed by another.
        private func handleEnd(of session: inout Session, sender: String, last: Position) {
            let units = session.assembler.finish()
            for (index, unit) in units.enumerated() {
                handle(unit, in: &session, sender: sender, position: index == units.count - 1 ? last : .followed)
            }
        }

        private func handle(_ unit: ReceivedAccessUnit, in session: inout Session, sender: String, position: Position) {
            let arrived = session.arrivalTime(ofEnd: unit.endOffset) ?? MonotonicClock.now()
            if unit.isTruncated {
                dropLast(unit, from: sender, "\(unit.byteCount) of \(unit.timestamp!.accessUnitByteCount) bytes arrived")
                return
            }
            let hasPicture = unit.units.contains { unit.codec.role(ofType: unit.codec.typeValue(of: $0.bytes)).isVCL }
            if !hasPicture {
                // An access unit without its picture (a stream cut inside its parameter sets or SEI) is
                // never written; its parameter sets are still remembered for the next IDR.
                session.writer.rememberParameterSets(fromAnnexB: unit.annexB())
                if position != .followed && session.started {
                    dropLast(unit, from: sender, "it ended before its picture (\(unit.byteCount) bytes of parameter sets or SEI)")
                }
                return
            }
            if position == .lastBeforeReset && unit.timestamp == nil {
                // A bare stream says nothing of an access unit's length: after a reset, the last one may
                // be cut anywhere, and a cut slice often decodes without an error.
                dropLast(unit, from: sender, "the connection was reset, and a bare stream cannot show that it arrived whole")
                return
            }
            if !session.started && unit.codec != session.writer.codec {
                // The assembler recognised the codec from the sender's first unit.
                session.writer = AnnexBStreamWriter(codec: unit.codec)
            }
            if decoder?.codec != unit.codec {
                if let old = decoder { receiver.shared.withLock { $0.decodedFrames += old.flush().frames } }
                decoder = try? VideoDecoder(codec: unit.codec)
            }
            session.output.removeAll(keepingCapacity: true)
            let info: AccessUnitInfo
            do {
                info = try session.writer.write(accessUnit: unit.annexB(), into: &session.output)
            } catch {
                // Before the first IDR (or an IDR without parameter sets): not written.
                if hasPicture { receiver.shared.withLock { $0.skippedBeforeStart += 1 } }
                return
            }
            if info.heldBack || session.output.isEmpty { return }
            if !session.started {
                session.started = true
                if session.frames == 0 && receiver.progress.frames > 0 {
                    log("resumed at an IDR with SPS and PPS")
                }
            }
            if let note = unit.timestamp {
                if let last = session.lastSequence, note.sequence > last + 1 {
                    let missing = Int(note.sequence - last - 1)
                    receiver.shared.withLock { p in
                        p.gaps += 1
                        p.missingFrames += missing
                    }
                    log("gap: \(missing) frame\(missing == 1 ? "" : "s") missing before frame \(note.sequence) (sender skipped ahead to an IDR, or the camera dropped)")
                }
                session.lastSequence = note.sequence
            }

            let decoded = decoder?.decode(session.output) ?? VideoDecoder.Result()
            let decodedAt = MonotonicClock.now()
            if position == .lastBeforeEnd && unit.timestamp == nil, let error = decoded.error {
                // The last access unit of a bare stream: one that does not decode is taken as cut.
                dropLast(unit, from: sender, "it does not decode (\(error)), so it was likely cut")
                return
            }
            if let error = decoded.error {
                session.reportedErrors += 1
                let count = receiver.shared.withLock { p -> Int in
                    p.decodeErrors += 1
                    return p.decodeErrors
                }
                if count <= 5 || count % 100 == 0 {
                    log("decode error #\(count) in frame \(receiver.progress.frames)\(unit.isIDR ? " (IDR)" : ""): \(error)")
                }
            }

            if let sink {
                do {
                    try session.output.withUnsafeBytes { try sink.write($0) }
                    sink.commitBoundary()
                } catch {
                    outputError = error as? OutputError ?? OutputError(.unwritable, "\(error)")
                    return
                }
            }

            var latency: UInt64 = 0
            if unit.timestamp != nil { receiver.shared.withLock { $0.timedFrames += 1 } }
            if let note = unit.timestamp, note.captureTimeNanoseconds > 0, arrived >= note.captureTimeNanoseconds {
                latency = arrived - note.captureTimeNanoseconds
                arrivalLatency.add(latency)
                decodedLatency.add(decodedAt - note.captureTimeNanoseconds)
                if arrived >= note.sendTimeNanoseconds { transferLatency.add(arrived - note.sendTimeNanoseconds) }
                if let latencyLog {
                    let transfer = arrived >= note.sendTimeNanoseconds ? (arrived - note.sendTimeNanoseconds) / 1000 : 0
                    fputs("\(note.sequence) \(latency / 1000) \((decodedAt - note.captureTimeNanoseconds) / 1000) \(transfer)\n", latencyLog)
                }
            }
            session.frames += 1
            let now = decodedAt
            if firstFrameTime == nil { firstFrameTime = now }
            let total = receiver.shared.withLock { p -> Int in
                p.frames += 1
                p.bytes += session.output.count
                if info.isIDR { p.idrFrames += 1 }
                p.decodedFrames += decoded.frames
                if latency > 0 { p.lastLatencyNanoseconds = latency }
                if let d = decoder, d.width > 0 {
                    p.width = d.width
                    p.height = d.height
                }
                return p.frames
            }
            if let max = options.maximumFrames, total >= max { limitReached = true }
            if let seconds = options.maximumDurationSeconds, let first = firstFrameTime, Double(now - first) / 1e9 >= seconds {
                limitReached = true
            }
        }

        /// Leaves out the last access unit of a connection, counted in `truncated`.
        private func dropLast(_ unit: ReceivedAccessUnit, from sender: String, _ why: String) {
            receiver.shared.withLock { $0.truncated += 1 }
            log("dropped the last access unit from \(sender): \(why)")
        }
    }
}
