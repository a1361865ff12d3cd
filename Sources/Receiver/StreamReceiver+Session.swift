import Bitstream
import NetStream

extension StreamReceiver {
    /// Where an access unit stands in its connection: followed by the next one (so it is whole),
    /// or the last one, after an orderly end of stream or after a broken connection (a reset).
    enum Position {
        case followed
        case lastBeforeEnd
        case lastBeforeReset
    }

    struct Session {
        var assembler = AccessUnitAssembler()
        var writer = AnnexBStreamWriter()
        var started = false
        var frames = 0
        var lastSequence: UInt64?
        var output: [UInt8] = []
        /// (stream offset just past a read, when it was read), oldest first.
        var arrivals: [(end: Int, time: UInt64)] = []
        var arrivalHead = 0
        var reportedErrors = 0

        func garbageReason(limit: Int) -> String? {
            if assembler.pendingByteCount > limit {
                return assembler.nalUnitCount == 0 ? "\(assembler.pendingByteCount) bytes without an Annex-B start code"
                    : "a NAL unit over \(limit >> 20) MiB"
            }
            if !started && assembler.bytesConsumed > limit {
                return "no IDR with SPS and PPS in the first \(assembler.bytesConsumed) bytes"
            }
            return nil
        }

        /// Once started, one access unit may not outgrow what the SPS's level allows.
        func oversizeReason(limitOverride: Int?) -> String? {
            guard started else { return nil }
            // The level's bound and how to name it, from the SPS of the stream's codec.
            let level: (bytes: Int, name: String, size: String)
            if let sps = writer.hevcSequenceParameterSet, writer.codec == .hevc {
                level = (AccessUnitLimit.maximumBytes(for: sps), sps.profileTierLevel.levelName, "\(sps.displayedWidth)x\(sps.displayedHeight)")
            } else if let sps = writer.sequenceParameterSet, writer.codec == .h264 {
                level = (AccessUnitLimit.maximumBytes(for: sps), Self.levelName(sps.levelIdc),
                         "\(sps.picWidthInMbs * 16)x\(sps.picHeightInMapUnits * (sps.frameMbsOnlyFlag ? 16 : 32))")
            } else {
                return nil
            }
            let limit = limitOverride ?? level.bytes
            let open = assembler.openAccessUnitByteCount
            guard open > limit else { return nil }
            return "sent an access unit of over \(open) bytes, more than level \(level.name) allows for \(level.size) (limit \(limit) bytes)"
        }

        static func levelName(_ idc: UInt8) -> String { idc == 9 ? "1b" : "\(idc / 10).\(idc % 10)" }

        /// Records when the bytes up to `end` arrived. Bounded: past 4096 reads within one
        /// access unit (a peer dribbling bytes) the newest entry is stretched instead.
        mutating func noteArrival(end: Int, at time: UInt64) {
            if arrivals.count - arrivalHead >= 4096 {
                arrivals[arrivals.count - 1].end = end
            } else {
                arrivals.append((end, time))
            }
        }

        /// When the read holding stream offset `end - 1` arrived.
        mutating func arrivalTime(ofEnd end: Int) -> UInt64? {
            while arrivalHead < arrivals.count && arrivals[arrivalHead].end < end { arrivalHead += 1 }
            let time = arrivalHead < arrivals.count ? arrivals[arrivalHead].time : nil
            if arrivalHead > 1024 {
                arrivals.removeFirst(arrivalHead)
                arrivalHead = 0
            }
            return time
        }
    }
}
