import Bitstream
import Frames
import Glibc
import Hub
import NIOCore
import NetStream
import Synchronization
import SystemPackage

/// One receiver of a listening camrec: a task on SwiftNIO's event loops, not a thread. What it sends
/// comes from its hub subscription (`.skipToIDR`): it starts at an IDR (which carries SPS and PPS),
/// and when it falls behind by the subscription's depth the hub drops what waits and resumes it at the
/// next IDR, so it never gets half an access unit or a picture whose references it lacks, and never
/// holds up capture.
///
/// One access unit is in flight at a time, copied into the session's one reusable buffer, and the next
/// is taken only when the kernel has the last (so the buffer is never shared when it is refilled, and
/// nothing is allocated per frame once it has grown to the largest access unit).
///
/// Eviction, so receivers that don't keep up never hold a slot for long: a receiver is reset when one
/// access unit takes it more than `stallTimeout` to take, and let go as soon as it closes its side (its
/// inbound stream ends), even while it waits for an IDR.
final class TCPReceiverSession: Sendable {
    let name: String
    let peerAddress: String
    private let channel: Channel
    private let subscription: Subscription
    private let stallTimeoutMilliseconds: Int64
    private let sendsTimingSEI: Bool
    private let codec: VideoCodec
    private let log: NetworkEventLog
    private let state = Mutex(State())

    private struct State {
        var alive = true
        var frames = 0
        var bytes = 0
        var idrFrames = 0
        /// Taken from the subscription but not sent (it failed or was cut on the way).
        var lost = 0
        var failure: String?
        /// Why camrec cut the connection, when it did: said instead of the write's own error.
        var cutReason: String?
        var ignoredInputBytes = 0
        var latency = LatencySamples()
    }

    init(channel: Channel, name: String, peerAddress: String, subscription: Subscription, stallTimeoutSeconds: Double,
         sendsTimingSEI: Bool, codec: VideoCodec, log: @escaping NetworkEventLog) {
        self.channel = channel
        self.name = name
        self.peerAddress = peerAddress
        self.subscription = subscription
        self.sendsTimingSEI = sendsTimingSEI
        self.codec = codec
        self.log = log
        stallTimeoutMilliseconds = Int64(stallMilliseconds(stallTimeoutSeconds))
    }

    var isAlive: Bool { state.withLock { $0.alive } }

    /// Serves the receiver until the stream ends, it leaves, or camrec cuts it; then closes the connection.
    func run(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        do {
            try await connection.executeThenClose { inbound, _ in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.watchForLeaving(inbound) }
                    group.addTask { await self.sendStream() }
                    // Whichever ends first ends the other: the stream is over, or the receiver left.
                    await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            // Closing a connection that is already gone: nothing to add.
        }
        subscription.stopTaking()
    }

    /// Reads and discards what the receiver sends (a receiver has nothing to say); the end of its
    /// inbound stream is its leaving (a half-close counts: a receiver does not send).
    private func watchForLeaving(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>) async {
        do {
            for try await bytes in inbound {
                let first = state.withLock { s -> Bool in
                    defer { s.ignoredInputBytes += bytes.readableBytes }
                    return s.ignoredInputBytes == 0
                }
                if first { log("\(name): ignoring bytes the receiver sends (camrec only sends video on this connection)") }
            }
        } catch {
            // A reset: it left all the same.
        }
        if Task.isCancelled { return }
        fail(state.withLock { $0.cutReason } ?? "went away (it closed the connection)")
    }

    private func sendStream() async {
        var note = sendsTimingSEI ? TimingNoteInserter(codec: codec) : nil
        var buffer = channel.allocator.buffer(capacity: 0)
        while let chunk = await subscription.nextAsync() {
            defer { chunk.release() }
            guard isAlive else {
                state.withLock { $0.lost += 1 }
                continue
            }
            buffer.clear()
            if note != nil {
                note!.withPieces(of: chunk, sendTimeNanoseconds: MonotonicClock.now()) { pieces in
                    for piece in pieces { buffer.writeBytes(piece) }
                }
            } else {
                chunk.bytes.withUnsafeBytes { _ = buffer.writeBytes($0) }
            }
            do {
                try await send(buffer)
            } catch {
                state.withLock { $0.lost += 1 }
                fail(message(for: error))
                continue
            }
            let done = MonotonicClock.now()
            state.withLock { s in
                s.frames += 1
                s.bytes += chunk.bytes.count
                if chunk.isIDR { s.idrFrames += 1 }
                if chunk.captureTimeNanoseconds > 0 && done >= chunk.captureTimeNanoseconds {
                    s.latency.add(done - chunk.captureTimeNanoseconds)
                }
            }
        }
    }

    /// One access unit, until the kernel has all of it; a receiver that takes longer than the stall
    /// timeout is cut (with a reset: it may hold the head of this access unit, and a bare stream has no
    /// length that would tell it).
    private func send(_ buffer: ByteBuffer) async throws {
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(stallTimeoutMilliseconds)) { [self] in
            cut("fell behind: one access unit took it over \(stallTimeoutMilliseconds / 1000) s; disconnected")
        }
        defer { timer.cancel() }
        try await channel.writeAndFlush(buffer).get()
    }

    /// Ends the connection now with a reset, for `reason` (said once, in place of the write's error).
    func cut(_ reason: String) {
        let first = state.withLock { s -> Bool in
            guard s.cutReason == nil && s.alive else { return false }
            s.cutReason = reason
            return true
        }
        guard first else { return }
        let channel = self.channel
        guard let options = channel as? SocketOptionProvider else { return channel.close(promise: nil) }
        options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    private func message(for error: Error) -> String {
        if let reason = state.withLock({ $0.cutReason }) { return reason }
        if let error = error as? IOError {
            return "went away (send(): \(Errno(rawValue: error.errnoCode)))"
        }
        if let error = error as? ChannelError, error == .ioOnClosedChannel || error == .alreadyClosed {
            return "went away (it closed the connection)"
        }
        return "failed: \(error)"
    }

    private func fail(_ message: String) {
        let first = state.withLock { s -> Bool in
            defer { s.alive = false }
            if s.alive { s.failure = message }
            return s.alive
        }
        if first { log("\(name) \(message)") }
        // Later access units are only counted, and what waits is let go now.
        subscription.stopTaking()
        channel.close(promise: nil)
    }

    /// After the stream ended: what is queued may take until `deadline` (seconds from now); then the
    /// receiver is cut.
    func finish(within seconds: Double) {
        if seconds <= 0 { return abortNow() }
        channel.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { [self] in
            cut("could not take the rest of the stream before the recording ended")
        }
    }

    /// A second interrupt: stop waiting. What it already took stays sent.
    func abortNow() {
        cut("could not take the rest of the stream before the recording ended")
    }

    var summary: PeerSender.Summary {
        let s = state.withLock { $0 }
        return subscription.peerSummary(frames: s.frames, bytes: s.bytes, idrFrames: s.idrFrames, lost: s.lost,
                                        failure: s.failure, latency: s.latency)
    }

    /// Leaves the hub (after `run` returned).
    func leaveHub() { subscription.cancel() }
}
