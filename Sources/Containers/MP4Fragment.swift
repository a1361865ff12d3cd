import Bitstream

/// The samples of the fragment being gathered (one `moof` + `mdat`): their bytes, already
/// length-prefixed, and their decode times and sizes. Its buffers are kept from one fragment to the
/// next, so once they have grown to a fragment's size nothing more is allocated.
struct MP4Fragment {
    /// The `mdat`'s payload: every sample, length-prefixed.
    private(set) var data: [UInt8] = []
    private var times: [UInt64] = []
    private var sizes: [UInt32] = []
    /// Whether the first sample is a sync sample (an IDR): only a fragment's first can be.
    private(set) var startsWithSync = false

    init() {
        data.reserveCapacity(1 << 20)
        times.reserveCapacity(128)
        sizes.reserveCapacity(128)
    }

    var isEmpty: Bool { times.isEmpty }
    /// The first sample's decode time (the fragment is not empty).
    var startTime: UInt64 { times[0] }

    /// Adds one access unit (Annex B) as a sample at `time` (timescale units, later than the last).
    mutating func add(_ annexB: UnsafeRawBufferPointer, time: UInt64, sync: Bool) {
        if times.isEmpty { startsWithSync = sync }
        let size = AVCC.appendLengthPrefixed(fromAnnexB: annexB, to: &data)
        times.append(time)
        sizes.append(UInt32(truncatingIfNeeded: size))
    }

    mutating func reset() {
        data.removeAll(keepingCapacity: true)
        times.removeAll(keepingCapacity: true)
        sizes.removeAll(keepingCapacity: true)
        startsWithSync = false
    }

    /// sample_depends_on 2 (an IDR depends on nothing); the rest depend on others and are not sync samples.
    static let syncSampleFlags: UInt32 = 0x0200_0000
    static let otherSampleFlags: UInt32 = 0x0101_0000

    /// Writes the fragment's `moof` and the `mdat` box's header (its payload is `data`). Each sample
    /// lasts until the next one; the last until `endTime` (the next fragment's first sample, or the
    /// file's end).
    func writeHeader(sequence: UInt32, endTime: UInt64, into boxes: inout MP4BoxBuffer) {
        let moofStart = boxes.count
        var dataOffsetAt = 0
        boxes.box("moof") { moof in
            moof.box("mfhd", version: 0) { $0.u32(sequence) }
            moof.box("traf") { traf in
                // default-base-is-moof, default-sample-flags present
                traf.box("tfhd", version: 0, flags: 0x02_0020) { tfhd in
                    tfhd.u32(MP4Header.trackID)
                    tfhd.u32(Self.otherSampleFlags)
                }
                traf.box("tfdt", version: 1) { $0.u64(times[0]) }
                // data-offset, sample-duration, sample-size, and first-sample-flags for an IDR
                let flags: UInt32 = 0x000301 | (startsWithSync ? 0x000004 : 0)
                traf.box("trun", version: 0, flags: flags) { trun in
                    trun.u32(UInt32(times.count))
                    dataOffsetAt = trun.count
                    trun.u32(0)                       // data_offset, once the moof's size is known
                    if startsWithSync { trun.u32(Self.syncSampleFlags) }
                    for index in times.indices {
                        let next = index + 1 < times.count ? times[index + 1] : endTime
                        trun.u32(UInt32(clamping: next - times[index]))
                        trun.u32(sizes[index])
                    }
                }
            }
        }
        // The samples start right after the moof and the mdat's 8-byte header.
        boxes.patchU32(at: dataOffsetAt, UInt32(boxes.count - moofStart + 8))
        boxes.u32(UInt32(clamping: 8 + data.count))
        boxes.fourCC("mdat")
    }
}
