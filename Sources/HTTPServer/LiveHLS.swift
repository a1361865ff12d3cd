import Containers
import Frames
import Glibc
import Hub
import NIOCore
import Synchronization
import SystemSupport

/// `/live.m3u8`: the live stream as HLS, for players without Media Source Extensions (iPhones before
/// iOS 17.1, smart TVs, Home Assistant's stream). One packager takes the hub's access units into the
/// live page's own fragmenter (`LiveMP4Fragmenter`: one `moof`+`mdat` a frame, sound in the picture's
/// fragments) and strings the fragments from each IDR into a segment; the init segment is its
/// `ftyp`+`moov` (`EXT-X-MAP`). Nothing is re-encoded or muxed twice.
///
/// It runs only while asked: the first request starts it (from the newest IDR the hub holds), and it stops
/// `idleSeconds` after the last one. It lists a window of at most `windowSegments` finished segments; a
/// segment that leaves the list stays fetchable for its own duration plus the playlist's (RFC 8216 6.2.2:
/// a player that read the list just before may still ask for it), and all of them together stay within
/// half of `maximumBytes`, the segment being made the other half. A segment is an immutable `ByteBuffer`
/// that every fetcher shares, so fetchers cost no copies, and the packager never waits for them: it is a
/// `.skipToIDR` subscriber, so neither it nor a slow fetcher can hold up capture.
final class LiveHLS: Sendable {
    struct Segment: Sendable {
        let sequence: Int
        let bytes: ByteBuffer
        let seconds: Double
        /// The wall-clock time its first frame was captured (seconds since 1970).
        let programDate: Double
    }

    private struct State {
        var running = false
        /// Bumped at each start: the init segment's name, so a player never mixes two packagers' files.
        var generation = 0
        var lastAsked: UInt64 = 0
        var initSegment: ByteBuffer?
        var segments: [Segment] = []
        /// Segments that left the list, each fetchable until its monotonic deadline (nanoseconds).
        var retired: [(segment: Segment, until: UInt64)] = []
        var nextSequence = 0
        /// At least 2: a viewer's IDR can make a segment of up to two picture groups of a second, and
        /// players expect the target to stay as it is.
        var targetSeconds = 2
        /// Playlist requests waiting for the first segment, by number (`nextSegment`).
        var waits: [Int: SegmentWait] = [:]
        var nextWait = 0
    }
    /// One playlist request's wait for a segment: resumed with true when the packager finishes one, false
    /// when it ends, or at the request's deadline or cancellation.
    private enum SegmentWait {
        /// Its task has not stored its continuation yet.
        case pending
        case waiting(CheckedContinuation<Bool, Never>)
        /// Decided before the continuation was stored.
        case over(Bool)
    }
    private let state = Mutex(State())
    private let live: LiveViewOutput
    private let wake: AsyncStream<Void>.Continuation
    private let wakeups: AsyncStream<Void>

    static let windowSegments = 6
    /// Finished segments and the one being made, together.
    static let maximumBytes = 48 << 20
    /// A segment is cut at the first IDR this long after its start (the default GOP is a second).
    static let minimumSegmentSeconds = 0.9
    static let idleSeconds: UInt64 = 30
    /// How long the first playlist request waits for the first segment.
    static let firstSegmentWaitSeconds = 10.0

    init(live: LiveViewOutput) {
        self.live = live
        (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The packager's life, in the server's task group: it waits for a request, packages until
    /// nobody has asked for `idleSeconds` or the stream ends, and waits again. Ends when cancelled.
    func run() async {
        for await _ in wakeups {
            await package()
            if Task.isCancelled { return }
        }
    }

    /// The playlist, starting the packager if it is not running; waits a little for its first segment.
    /// Nil when there is none yet (no IDR within the wait, or the recording is over).
    func playlist() async -> String? {
        let deadline = MonotonicClock.now() + UInt64(Self.firstSegmentWaitSeconds * 1e9)
        askedNow()
        while true {
            // The wait is set up with the look, so a segment finished between the two is not missed.
            let (text, wait) = state.withLock { s -> (String?, Int) in
                if let text = Self.playlistText(s) { return (text, 0) }
                s.nextWait += 1
                s.waits[s.nextWait] = .pending
                return (nil, s.nextWait)
            }
            if let text { return text }
            // Only while the first segment is made (about a picture group): woken by its arrival.
            guard await nextSegment(wait, before: deadline) else { return state.withLock { Self.playlistText($0) } }
        }
    }

    /// Waits until the packager finishes a segment (true), or ends, or `deadline` (monotonic) passes, or
    /// the task is cancelled (false).
    private func nextSegment(_ id: Int, before deadline: UInt64) async -> Bool {
        let now = MonotonicClock.now()
        guard now < deadline, !Task.isCancelled else {
            state.withLock { _ = $0.waits.removeValue(forKey: id) }
            return false
        }
        let arrived = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { self.store($0, for: id) }
                } onCancel: {
                    self.endWait(id, arrived: false)
                }
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: deadline - now)  // a deadline, not a poll: cancelled once a segment came
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? false
        }
        state.withLock { _ = $0.waits.removeValue(forKey: id) }
        return arrived
    }

    private func store(_ continuation: CheckedContinuation<Bool, Never>, for id: Int) {
        let decided = state.withLock { s -> Bool? in
            guard case .pending = s.waits[id] else {
                if case .over(let arrived) = s.waits[id] { return arrived }
                return false
            }
            s.waits[id] = .waiting(continuation)
            return nil
        }
        if let decided { continuation.resume(returning: decided) }
    }

    /// Ends one request's wait with `arrived`.
    private func endWait(_ id: Int, arrived: Bool) {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            switch s.waits[id] {
            case .pending: s.waits[id] = .over(arrived)
            case .waiting(let continuation):
                s.waits[id] = .over(arrived)
                return continuation
            case .over, nil: break
            }
            return nil
        }
        waiter?.resume(returning: arrived)
    }

    /// Ends every request's wait: `arrived` when a segment is finished, false when the packager ended.
    private func endWaits(arrived: Bool) {
        for id in state.withLock({ Array($0.waits.keys) }) { endWait(id, arrived: arrived) }
    }

    /// The init segment of the running packager, if `generation` is its.
    func initSegment(generation: Int) -> ByteBuffer? {
        askedNow()
        return state.withLock { $0.generation == generation ? $0.initSegment : nil }
    }

    /// A segment still in the window.
    func segment(_ sequence: Int) -> ByteBuffer? {
        askedNow()
        let now = MonotonicClock.now()
        return state.withLock { s in
            s.retired.removeAll { $0.until <= now }
            return s.segments.first { $0.sequence == sequence }?.bytes
                ?? s.retired.first { $0.segment.sequence == sequence }?.segment.bytes
        }
    }

    private func askedNow() {
        let start = state.withLock { s -> Bool in
            s.lastAsked = MonotonicClock.now()
            guard !s.running else { return false }
            s.running = true
            return true
        }
        if start { wake.yield() }
    }

    private static func playlistText(_ s: State) -> String? {
        guard s.running, s.initSegment != nil, let first = s.segments.first else { return nil }
        var text = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:\(s.targetSeconds)\n"
            + "#EXT-X-MEDIA-SEQUENCE:\(first.sequence)\n#EXT-X-INDEPENDENT-SEGMENTS\n"
            + "#EXT-X-MAP:URI=\"/hls/init-\(s.generation).mp4\"\n"
        for segment in s.segments {
            text += "#EXT-X-PROGRAM-DATE-TIME:\(iso8601UTC(segment.programDate))\n"
            text += "#EXTINF:" + segment.seconds.decimalText(places: 3) + ",\n/hls/\(segment.sequence).m4s\n"
        }
        return text
    }

    /// Wall-clock seconds of a monotonic capture time.
    private static func wallClock(ofCapture capture: UInt64) -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let monotonic = MonotonicClock.now()
        let age = monotonic >= capture ? Double(monotonic - capture) / 1e9 : 0
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - age
    }

    /// One run of the packager: from the next IDR until idle or the end of the stream.
    private func package() async {
        defer {
            state.withLock { s in
                s.running = false
                s.initSegment = nil
                s.segments = []
                s.retired = []
            }
            endWaits(arrived: false)
        }
        guard let (subscription, fragmenter) = await feed() else { return }
        defer { subscription.cancel() }
        state.withLock { $0.generation += 1 }
        let frameNanoseconds = UInt64((1e9 / live.framesPerSecond).rounded())
        var open: (bytes: ByteBuffer, first: UInt64, last: UInt64, programDate: Double)?
        while let chunk = await subscription.nextAsync() {
            defer { chunk.release() }
            if chunk.kind == .video && chunk.isIDR, let segment = open,
               chunk.presentationTimeNanoseconds >= segment.first + UInt64(Self.minimumSegmentSeconds * 1e9) {
                finish(segment.bytes, seconds: Double(segment.last + frameNanoseconds - segment.first) / 1e9, programDate: segment.programDate)
                endWaits(arrived: true)
                open = nil
            }
            let fragment: [UInt8]?
            do { fragment = try fragmenter.fragment(of: chunk) } catch { return }
            guard let fragment else { continue }
            if open == nil {
                guard chunk.isIDR else { continue }
                if state.withLock({ $0.initSegment == nil }), let initBytes = fragmenter.initSegment {
                    state.withLock { $0.initSegment = ByteBuffer(bytes: initBytes) }
                }
                open = (ByteBuffer(), chunk.presentationTimeNanoseconds, chunk.presentationTimeNanoseconds,
                        Self.wallClock(ofCapture: chunk.captureTimeNanoseconds))
            }
            open!.bytes.writeBytes(fragment)
            open!.last = chunk.presentationTimeNanoseconds
            // A picture group too big to keep: dropped whole, the next segment starts at the next IDR.
            if open!.bytes.readableBytes > Self.maximumBytes / 2 { open = nil }
            let idle = state.withLock { MonotonicClock.now() - $0.lastAsked > Self.idleSeconds * 1_000_000_000 }
            if idle { return }
        }
    }

    /// The hub's feed for the packager; asked before the recording has started, it waits for the start.
    private func feed() async -> (Subscription, LiveMP4Fragmenter)? {
        if let feed = live.packagerFeed() { return feed }
        await live.started()
        return live.packagerFeed()
    }

    /// A finished segment joins the window; the oldest leave it past its bounds.
    private func finish(_ bytes: ByteBuffer, seconds: Double, programDate: Double) {
        state.withLock { s in
            s.segments.append(Segment(sequence: s.nextSequence, bytes: bytes, seconds: seconds, programDate: programDate))
            s.nextSequence += 1
            // EXTINF rounded must not exceed the target; it only grows, as players expect it to stay.
            s.targetSeconds = max(s.targetSeconds, Int(seconds.rounded()))
            let now = MonotonicClock.now()
            let listed = s.segments.reduce(0) { $0 + $1.seconds }
            s.retired.removeAll { $0.until <= now }
            while s.segments.count > Self.windowSegments {
                let gone = s.segments.removeFirst()
                s.retired.append((gone, now + UInt64((gone.seconds + listed) * 1e9)))
            }
            var total = (s.segments + s.retired.map(\.segment)).reduce(0) { $0 + $1.bytes.readableBytes }
            while total > Self.maximumBytes / 2, !s.retired.isEmpty {
                total -= s.retired.removeFirst().segment.bytes.readableBytes
            }
            while s.segments.count > 1 && total > Self.maximumBytes / 2 {
                total -= s.segments.removeFirst().bytes.readableBytes
            }
        }
    }
}
