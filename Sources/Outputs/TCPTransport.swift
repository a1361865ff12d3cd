import Frames
import Hub
import Bitstream
import NetStream
import Synchronization

/// A raw Annex-B stream over one TCP connection: bare, or with camrec's timing note (TimestampSEI)
/// at the head of every access unit when `--timing-sei` asks for it.
final class TCPTransport: PeerTransport {
    let connection: TCPConnection
    var peerAddress: String { connection.peerAddress }
    var connectsOnFirstSend: Bool { false }
    private var timingNote: TimingNoteInserter?
    private let codec: VideoCodec
    private let log: NetworkEventLog
    private let name: String
    private var input = [UInt8](repeating: 0, count: 4096)
    private var ignoredInputBytes = 0
    /// A send failed or was abandoned part way: the peer may hold the head of an access unit.
    private var cutInsideAccessUnit = false

    init(connection: TCPConnection, name: String, sendsTimingSEI: Bool, codec: VideoCodec = .h264, log: @escaping NetworkEventLog) {
        self.connection = connection
        self.codec = codec
        self.name = name
        timingNote = sendsTimingSEI ? TimingNoteInserter(codec: codec) : nil
        self.log = log
        connection.limitSendBuffer(bytes: 256 * 1024)
    }

    func send(_ chunk: StreamChunk, stallTimeoutMilliseconds: Int, abort: () -> Bool) throws {
        cutInsideAccessUnit = true
        try sendWhole(chunk, stallTimeoutMilliseconds: stallTimeoutMilliseconds, abort: abort)
        cutInsideAccessUnit = false
    }

    private func sendWhole(_ chunk: StreamChunk, stallTimeoutMilliseconds: Int, abort: () -> Bool) throws {
        guard timingNote != nil else {
            try chunk.bytes.withUnsafeBytes {
                try connection.send([$0], stallTimeoutMilliseconds: stallTimeoutMilliseconds, abort: abort)
            }
            return
        }
        try timingNote!.withPieces(of: chunk, sendTimeNanoseconds: MonotonicClock.now()) { pieces in
            try connection.send(pieces, stallTimeoutMilliseconds: stallTimeoutMilliseconds, abort: abort)
        }
    }

    /// Reads and discards what the peer sends (receivers are not expected to send).
    func isOpen() throws -> Bool {
        while true {
            let result = try input.withUnsafeMutableBytes { try connection.receive(into: $0, timeoutMilliseconds: 0) }
            switch result {
            case .timedOut:
                return true
            case .endOfStream:
                return false
            case .bytes(let n):
                if ignoredInputBytes == 0 { log("\(name): ignoring bytes the receiver sends (camrec only sends H.264 on this connection)") }
                ignoredInputBytes += n
            }
        }
    }

    /// An orderly end after whole access units; a reset when the last one was cut, so a receiver
    /// of a bare stream (which has no length to check) knows not to keep its head.
    func close(abort: () -> Bool) {
        if cutInsideAccessUnit {
            connection.reset()
            return
        }
        connection.shutdownWrite()
        connection.close()
    }
}
