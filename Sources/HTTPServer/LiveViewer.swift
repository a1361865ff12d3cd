import Synchronization

/// One browser watching live: what it is still to be sent, bounded. It starts at an IDR and, when it
/// falls behind by more than `queueLimit` fragments, skips to the next IDR (as slow TCP receivers
/// do), so a stuck browser costs a bounded amount of memory and never stalls the recording.
final class LiveViewer: Sendable {
    enum Piece: Sendable {
        /// JSON the page reads first: `{"codecs": "avc1.…"}`.
        case description(String)
        case initSegment([UInt8])
        case fragment([UInt8])
    }

    let pieces: AsyncStream<Piece>
    private let continuation: AsyncStream<Piece>.Continuation
    private struct State {
        var queued = 0
        var waitingForIDR = true
        var skippedFrames = 0
        var sentFrames = 0
        var sentBytes = 0
    }
    private let state = Mutex(State())
    let queueLimit: Int

    init(queueLimit: Int) {
        self.queueLimit = queueLimit
        (pieces, continuation) = AsyncStream.makeStream(of: Piece.self, bufferingPolicy: .unbounded)
    }

    /// The stream's description and init segment: sent before any fragment.
    func start(codecs: String, initSegment: [UInt8]) {
        continuation.yield(.description("{\"codecs\":\"\(codecs)\"}"))
        continuation.yield(.initSegment(initSegment))
    }

    /// Offers one frame's fragment; returns false when it was skipped.
    @discardableResult
    func offer(_ fragment: [UInt8], isIDR: Bool) -> Bool {
        let queue = state.withLock { s -> Bool in
            if s.waitingForIDR {
                guard isIDR else { s.skippedFrames += 1; return false }
                s.waitingForIDR = false
            }
            if s.queued >= queueLimit {
                s.waitingForIDR = true
                s.skippedFrames += 1
                return false
            }
            s.queued += 1
            return true
        }
        if queue { continuation.yield(.fragment(fragment)) }
        return queue
    }

    /// One fragment of `bytes` left for the browser.
    func sent(bytes: Int) {
        state.withLock {
            $0.queued -= 1
            $0.sentFrames += 1
            $0.sentBytes += bytes
        }
    }

    var skippedFrames: Int { state.withLock { $0.skippedFrames } }
    /// Fragments sent to this browser, and their bytes.
    var sent: (frames: Int, bytes: Int) { state.withLock { ($0.sentFrames, $0.sentBytes) } }

    func end() { continuation.finish() }
}
