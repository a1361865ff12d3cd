import Bitstream
import NetStream
import Synchronization

/// A raw Annex-B stream over one TCP connection, with camrec's timing note (TimestampSEI) at the
/// head of every access unit unless `--no-timing-sei`.
final class TCPTransport: PeerTransport {
    let connection: TCPConnection
    var peerAddress: String { connection.peerAddress }
    var connectsOnFirstSend: Bool { false }
    private let sendsTimingSEI: Bool
    private let codec: VideoCodec
    private let log: NetworkEventLog
    private let name: String
    private var note: [UInt8] = []
    private var input = [UInt8](repeating: 0, count: 4096)
    private var ignoredInputBytes = 0

    init(connection: TCPConnection, name: String, sendsTimingSEI: Bool, codec: VideoCodec = .h264, log: @escaping NetworkEventLog) {
        self.connection = connection
        self.codec = codec
        self.name = name
        self.sendsTimingSEI = sendsTimingSEI
        self.log = log
        note.reserveCapacity(96)
        connection.limitSendBuffer(bytes: 256 * 1024)
    }

    func send(_ chunk: StreamChunk, stallTimeoutMilliseconds: Int, abort: () -> Bool) throws {
        note.removeAll(keepingCapacity: true)
        if sendsTimingSEI {
            TimestampSEI(captureTimeNanoseconds: chunk.captureTimeNanoseconds, sendTimeNanoseconds: monotonicNanoseconds(),
                         sequence: chunk.sequence, accessUnitByteCount: UInt64(chunk.bytes.count)).appendAnnexB(to: &note, codec: codec)
        }
        try chunk.bytes.withUnsafeBytes { bytes in
            let split = TimestampSEI.insertionOffset(in: bytes, codec: codec)
            try note.withUnsafeBytes { noteBytes in
                try connection.send([UnsafeRawBufferPointer(rebasing: bytes[..<split]), noteBytes,
                                     UnsafeRawBufferPointer(rebasing: bytes[split...])],
                                    stallTimeoutMilliseconds: stallTimeoutMilliseconds, abort: abort)
            }
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

    func close(abort: () -> Bool) {
        connection.shutdownWrite()
        connection.close()
    }
}
