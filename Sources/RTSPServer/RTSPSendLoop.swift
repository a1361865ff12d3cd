import Frames
import Glibc
import Hub
import NIOCore
import NIOPosix
import NetStream
import RTSP
import Synchronization

/// The playing sessions whose RTSP connections are on one event loop, sent to in one pass over them: a
/// session's hub subscription rings this loop's doorbell when it has something queued, and one task on
/// the loop then takes what each session holds and sends it (`RTSPSession.pump`). A picture costs the
/// loop one wake-up, not a task resumed (and a copy held) per client; a TCP client that cannot take more
/// is left with its queue, which the hub cuts back to the next IDR when it is full, as before. The UDP
/// clients' pictures of a pass are queued and sent at its end, one `sendmmsg` for all of them
/// (`RTPDatagramBatch`); each TCP client's is written at once, from the loop's one buffer.
final class RTSPSendLoop: SubscriptionDoorbell, Sendable {
    let loop: EventLoop
    private let rung = Atomic<Bool>(false)
    /// The loop's own: NIO checks each access is on it (once a pass, not a packet).
    private let onLoop: NIOLoopBoundBox<OnLoop>
    private final class OnLoop {
        var sessions: [RTSPSession] = []
        /// In a pass over the sessions: the UDP pictures queued wait for its end.
        var walking = false
        let datagrams = RTPDatagramBatch()
        /// A picture stamped for one TCP session and written; the next is stamped into the same memory
        /// once NIO has let go of it (written at once, as it is unless the client is behind), else into new.
        var interleaved = ByteBuffer()
        /// Which picture `interleaved` holds: the next session of the same picture only stamps its fields.
        var interleavedSerial: UInt64?
        /// The packets this loop's sessions asked for last: the rest of a pass takes them from here, not
        /// from the process's cache under its lock.
        var lastPackets: (key: RTPVideoPackets.Key, packets: RTPVideoPackets)?
        /// Every connection on this loop, playing or not, and the one task that checks them once a second.
        var watched: [RTSPConnection] = []
        var watchdog: RepeatedTask?
    }

    init(loop: EventLoop) {
        self.loop = loop
        onLoop = .makeBoxSendingValue(OnLoop(), eventLoop: loop)
    }

    func ring() {
        guard !rung.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in walk() }
    }

    /// One pass over the sessions, then the UDP pictures it queued; a ring after the flag is cleared brings another.
    private func walk() {
        rung.store(false, ordering: .releasing)
        let here = onLoop.value
        here.walking = true
        for session in here.sessions { session.pump() }
        here.walking = false
        here.datagrams.flush()
    }

    /// Checks `connection`'s life and writes once a second (`RTSPConnection.checkLife`) until `unwatch`: one
    /// task for every connection on the loop, so 100 clients cost the loop one timer wake-up a second, not 100
    /// (each connection had a timer of its own: 42 of a loop's 72 wake-ups a second with 100 clients on it).
    func watch(_ connection: RTSPConnection) {
        loop.execute { [self] in
            let here = onLoop.value
            here.watched.append(connection)
            guard here.watchdog == nil else { return }
            here.watchdog = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [self] _ in
                let now = MonotonicClock.now()
                for watched in onLoop.value.watched { watched.checkLife(at: now) }
            }
        }
    }

    /// `connection` has ended: no longer checked; the task ends with the loop's last connection.
    func unwatch(_ connection: RTSPConnection) {
        loop.execute { [self] in
            let here = onLoop.value
            here.watched.removeAll { $0 === connection }
            if here.watched.isEmpty {
                here.watchdog?.cancel()
                here.watchdog = nil
            }
        }
    }

    /// On the loop.
    func add(_ session: RTSPSession) {
        onLoop.value.sessions.append(session)
    }

    /// On the loop.
    func remove(_ session: RTSPSession) {
        onLoop.value.sessions.removeAll { $0 === session }
    }

    /// On the loop: the UDP pictures are queued here, sent at the end of the pass (or by `pumped`).
    var datagrams: RTPDatagramBatch { onLoop.value.datagrams }

    /// After a session's pump outside a pass (its first): what it queued is sent now.
    func pumped() {
        let here = onLoop.value
        if !here.walking { here.datagrams.flush() }
    }

    /// The packets of `chunk` for a session on this loop (on the loop): the ones made for the session before
    /// it in the pass, else `RTPVideoPackets.of`.
    func packets(of chunk: StreamChunk, packetizer: RTPPacketizer, payloadType: UInt8, timestamp: UInt32) -> RTPVideoPackets {
        let here = onLoop.value
        let key = RTPVideoPackets.key(of: chunk, packetizer: packetizer, payloadType: payloadType, timestamp: timestamp)
        if let last = here.lastPackets, last.key == key { return last.packets }
        let packets = RTPVideoPackets.of(key, chunk, packetizer: packetizer, payloadType: payloadType, timestamp: timestamp)
        here.lastPackets = (key, packets)
        return packets
    }

    /// `packets`' TCP image with a session's interleaved channel, sequence numbers and SSRC, to write (on the loop).
    /// Stamping writes every byte in which two sessions' copies differ, so the copy stamped for the session
    /// before, if it holds the same picture, is stamped again in place rather than copied anew; if NIO still
    /// holds that one (its client behind), the stamp copies it first (copy on write), as before.
    func interleaved(_ packets: RTPVideoPackets, channel: UInt8, firstSequence: UInt16, ssrc: UInt32) -> ByteBuffer {
        let here = onLoop.value
        var buffer = ByteBuffer()
        swap(&buffer, &here.interleaved)
        if here.interleavedSerial != packets.serial {
            buffer.clear(minimumCapacity: packets.image.readableBytes)
            buffer.writeImmutableBuffer(packets.image)
            here.interleavedSerial = packets.serial
        }
        buffer.withUnsafeMutableReadableBytes { packets.stamp($0, channel: channel, firstSequence: firstSequence, ssrc: ssrc) }
        here.interleaved = buffer
        return buffer
    }
}

/// On an RTSP connection, at the head of its pipeline: every write NIO is given for it, counted until NIO has
/// written it (the session writes its RTP past NIO only while none is left, `InterleavedSocket`), and when
/// it cannot take more and since when, for the watchdog's stall check; when it can again, its session
/// sends what waits. A picture larger than NIO's high-water mark flips the connection to "cannot" and back
/// on every write NIO makes of it; the change goes no further up the pipeline, where only NIOAsyncChannel's
/// outbound writer would hear it (camrec writes to the channel itself, never through that writer).
final class RTSPWritability: ChannelDuplexHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    /// Monotonic nanoseconds since the connection stopped taking bytes; 0 while it takes them.
    let blockedSince = Atomic<UInt64>(0)
    /// Writes given to NIO and not yet written (or failed).
    private let inNIO = Atomic<Int>(0)
    /// The connection, which is made after this handler (it holds it): set once, before the connection runs.
    private let owner = Mutex(Owner())
    private struct Owner {
        weak var connection: RTSPConnection?
    }

    var connection: RTSPConnection? {
        get { owner.withLock { $0.connection } }
        set { owner.withLock { $0.connection = newValue } }
    }

    /// Whether NIO holds none of the connection's bytes: the socket may be written directly.
    var nothingInNIO: Bool { inNIO.load(ordering: .relaxed) == 0 }

    /// The kernel took only part of a write made past NIO; NIO is given the rest, and the client is behind from now.
    func behind() {
        _ = blockedSince.compareExchange(expected: 0, desired: max(1, MonotonicClock.now()), ordering: .relaxed)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        inNIO.add(1, ordering: .relaxed)
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.whenComplete { [self] _ in
            guard inNIO.subtract(1, ordering: .relaxed).newValue == 0 else { return }
            blockedSince.store(0, ordering: .relaxed)
            connection?.session?.pump()
        }
        context.write(data, promise: written)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            blockedSince.store(0, ordering: .relaxed)
            connection?.session?.pump()
        } else {
            behind()
        }
    }
}
