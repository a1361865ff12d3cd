/// Splits an Annex B byte stream into NAL units, incrementally.
///
/// Feed it whatever the transport delivers (encoder packets, file blocks, TCP reads);
/// chunk boundaries may fall anywhere, even inside a start code. A unit is returned once
/// the start code after it has been seen, or by `finish()` for the last one.
///
/// Rules (H.264 Annex B.2):
/// - A start code is `00 00 01`. If the byte before it is also `00`, it is reported as a
///   4-byte start code (`zero_byte` + `start_code_prefix_one_3bytes`).
/// - Any other zero bytes before a start code are `trailing_zero_8bits` of the previous
///   unit and are stripped from it. Zero bytes at the end of the stream are stripped too.
/// - Bytes before the first start code are skipped and counted in `skippedLeadingBytes`.
/// - A start code directly followed by another one encloses an empty unit, which is not
///   a NAL unit at all; it is dropped and counted in `emptyUnitCount`.
///
/// Cost: every byte is looked at once and copied at most twice (into the pending unit,
/// then into the returned `NALUnit`), so the work is linear in the input whatever the
/// chunking. The pending buffer keeps its capacity between units.
public struct AnnexBScanner: Sendable {
    /// Bytes of the unit being collected (after its start code), possibly ending in zeros
    /// that will turn out to be trailing zeros or part of the next start code.
    private var pending: [UInt8] = []
    /// Length of the unit being collected; more than `pending.count` once past `keepLimit`.
    private var pendingLength = 0
    /// Bytes of each unit kept in memory; the rest is counted, not stored.
    public let keepLimit: Int
    private var inUnit = false
    private var pendingStartCodeLength = 0
    private var pendingOffset = 0
    /// Consecutive `00` bytes seen just before the current position, across chunks.
    private var zeroRun = 0
    /// Stream offset of the next byte to be appended.
    private var position = 0
    private var finished = false

    /// Bytes before the first start code (the whole input if it has none, once finished).
    public private(set) var skippedLeadingBytes = 0
    /// Start codes that were immediately followed by another start code or the end.
    public private(set) var emptyUnitCount = 0
    /// Total bytes consumed so far.
    public var bytesConsumed: Int { position }
    /// Bytes copied so far (into the pending unit, and out of it into returned units): the scanner's
    /// work besides looking at each byte once. Tests bound it to prove the cost is linear.
    public private(set) var bytesCopied = 0

    /// - Parameter keepLimit: bytes of each unit kept (the rest is only counted, in
    ///   `NALUnit.byteCount`), so a reader that needs headers only (`camrec inspect`) stays
    ///   bounded however large a unit is. Without it units are kept whole.
    public init(keepingAtMost keepLimit: Int = .max) {
        self.keepLimit = max(1, keepLimit)
    }

    /// Consumes `chunk` and returns the units it completed, in stream order.
    public mutating func append<C: Collection>(_ chunk: C) -> [NALUnit] where C.Element == UInt8 {
        if finished { self = AnnexBScanner(keepingAtMost: keepLimit) }
        var completed: [NALUnit] = []
        let done: Void? = chunk.withContiguousStorageIfAvailable { buffer in
            scan(buffer, into: &completed)
        }
        if done == nil {
            // Non-contiguous collections (e.g. a lazy map) are copied once; still linear.
            let copy = Array(chunk)
            copy.withUnsafeBufferPointer { scan($0, into: &completed) }
        }
        return completed
    }

    /// Ends the stream: returns the last unit, which has no start code after it.
    /// A later `append` starts a new stream.
    public mutating func finish() -> [NALUnit] {
        if finished { return [] }
        finished = true
        var completed: [NALUnit] = []
        if inUnit {
            dropPendingTail(min(zeroRun, pendingLength))
            emitPending(into: &completed)
            inUnit = false
        } else {
            skippedLeadingBytes = position
        }
        zeroRun = 0
        return completed
    }

    /// All units of a complete stream held in memory.
    public static func units(in bytes: some Collection<UInt8>) -> [NALUnit] {
        var scanner = AnnexBScanner()
        var result = scanner.append(bytes)
        result.append(contentsOf: scanner.finish())
        return result
    }

    /// Zero-copy walk over a complete Annex B buffer (for example one encoded packet).
    ///
    /// Calls `body` with the byte range of each unit (header + payload, trailing zeros
    /// stripped) and the length of the start code before it; the start code itself
    /// occupies `range.lowerBound - startCodeLength ..< range.lowerBound`.
    /// Bytes before the first start code and empty units are skipped, as in the scanner.
    public static func forEachUnit(
        in buffer: UnsafeRawBufferPointer,
        _ body: (_ range: Range<Int>, _ startCodeLength: Int) throws -> Void
    ) rethrows {
        var zeroRun = 0
        var unitStart = -1
        var unitStartCodeLength = 0
        var index = 0
        let count = buffer.count
        while index < count {
            let byte = buffer[index]
            if byte == 0 {
                zeroRun += 1
            } else {
                if byte == 1 && zeroRun >= 2 {
                    if unitStart >= 0 {
                        // The zeros just before this `01` are never part of the unit.
                        let end = index - zeroRun
                        if end > unitStart { try body(unitStart..<end, unitStartCodeLength) }
                    }
                    unitStart = index + 1
                    unitStartCodeLength = zeroRun >= 3 ? 4 : 3
                }
                zeroRun = 0
            }
            index += 1
        }
        if unitStart >= 0 {
            let end = count - zeroRun
            if end > unitStart { try body(unitStart..<end, unitStartCodeLength) }
        }
    }

    // MARK: - Private

    private mutating func scan(_ buffer: UnsafeBufferPointer<UInt8>, into completed: inout [NALUnit]) {
        // Bytes from `segmentStart` on belong to the pending unit but are not copied yet;
        // they are copied in one go at the next start code or at the end of the chunk.
        var segmentStart = 0
        var index = 0
        let count = buffer.count
        while index < count {
            let byte = buffer[index]
            if byte == 0 {
                zeroRun += 1
            } else {
                if byte == 1 && zeroRun >= 2 {
                    let startCodeLength = zeroRun >= 3 ? 4 : 3
                    let startCodeOffset = position + index - (startCodeLength - 1)
                    if inUnit {
                        appendToPending(UnsafeBufferPointer(rebasing: buffer[segmentStart...index]))
                        // The zero run (trailing zeros + start-code zeros) and the `01` all
                        // lie after the unit's own start code, so they are all in `pending`.
                        dropPendingTail(zeroRun + 1)
                        emitPending(into: &completed)
                    } else {
                        skippedLeadingBytes = startCodeOffset
                        inUnit = true
                    }
                    pendingStartCodeLength = startCodeLength
                    pendingOffset = startCodeOffset
                    segmentStart = index + 1
                }
                zeroRun = 0
            }
            index += 1
        }
        if inUnit && segmentStart < count {
            appendToPending(UnsafeBufferPointer(rebasing: buffer[segmentStart..<count]))
        }
        position += count
    }

    private mutating func appendToPending(_ segment: UnsafeBufferPointer<UInt8>) {
        pendingLength += segment.count
        let room = keepLimit - pending.count
        if room >= segment.count {
            pending.append(contentsOf: segment)
            bytesCopied += segment.count
        } else if room > 0 {
            pending.append(contentsOf: UnsafeBufferPointer(rebasing: segment[segment.startIndex..<segment.startIndex + room]))
            bytesCopied += room
        }
    }

    /// Takes the last `count` bytes off the unit (trailing zeros, the next start code).
    private mutating func dropPendingTail(_ count: Int) {
        pendingLength -= count
        if pending.count > pendingLength { pending.removeLast(pending.count - pendingLength) }
    }

    private mutating func emitPending(into completed: inout [NALUnit]) {
        if pendingLength == 0 {
            emptyUnitCount += 1
            return
        }
        // Copy at exact size so `pending` stays uniquely owned and keeps its capacity.
        var unit = NALUnit(bytes: Array(pending), startCodeLength: pendingStartCodeLength, offset: pendingOffset)
        unit.byteCount = pendingLength
        completed.append(unit)
        bytesCopied += pending.count
        pending.removeAll(keepingCapacity: true)
        pendingLength = 0
    }
}
