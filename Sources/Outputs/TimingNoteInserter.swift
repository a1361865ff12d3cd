import Frames
import Hub
import Bitstream
import NetStream

/// Puts camrec's timing note (`TimestampSEI`: capture and send times, sequence number and the
/// access unit's size) at the head of each access unit as it leaves camrec, where `--timing-sei`
/// asks for it: on a TCP peer, a raw file or stdout. Off by default, since a stream with it is no
/// longer bare (seed 001's receiver reads the first unit of an access unit as its SPS or slice).
///
/// The note goes where `TimestampSEI.insertionOffset` says (before the first unit of the access
/// unit), and its byte count is the access unit's own, so a receiver can tell a cut one.
/// Reuses one buffer; nothing is allocated per access unit.
public struct TimingNoteInserter: Sendable {
    public let codec: VideoCodec
    private var note: [UInt8] = []

    public init(codec: VideoCodec) {
        self.codec = codec
        note.reserveCapacity(96)
    }

    /// Calls `body` with the chunk's bytes in pieces: what stands before the note, the note (stamped
    /// with `sendTimeNanoseconds`), and the rest. Empty pieces are passed too.
    public mutating func withPieces<Result>(of chunk: StreamChunk, sendTimeNanoseconds: UInt64,
                                            _ body: ([UnsafeRawBufferPointer]) throws -> Result) rethrows -> Result {
        note.removeAll(keepingCapacity: true)
        TimestampSEI(captureTimeNanoseconds: chunk.captureTimeNanoseconds, sendTimeNanoseconds: sendTimeNanoseconds,
                     sequence: chunk.sequence, accessUnitByteCount: UInt64(chunk.bytes.count)).appendAnnexB(to: &note, codec: codec)
        let codec = self.codec
        return try chunk.bytes.withUnsafeBytes { bytes in
            let split = TimestampSEI.insertionOffset(in: bytes, codec: codec)
            return try note.withUnsafeBytes { noteBytes in
                try body([UnsafeRawBufferPointer(rebasing: bytes[..<split]), noteBytes, UnsafeRawBufferPointer(rebasing: bytes[split...])])
            }
        }
    }

    /// Bytes the note adds to an access unit.
    public var noteByteCount: Int { note.count }
}

extension ByteSink {
    /// Writes one access unit, with a timing note at its head when `inserter` is given.
    func write(_ chunk: StreamChunk, timingNote inserter: inout TimingNoteInserter?) throws -> Int {
        guard var active = inserter else {
            try chunk.bytes.withUnsafeBytes { try write($0) }
            return chunk.bytes.count
        }
        // Moved out and back, so its buffer has one owner and is reused, not copied.
        inserter = nil
        defer { inserter = active }
        return try active.withPieces(of: chunk, sendTimeNanoseconds: MonotonicClock.now()) { pieces in
            for piece in pieces where !piece.isEmpty { try write(piece) }
            return pieces.reduce(0) { $0 + $1.count }
        }
    }
}
