/// A growing buffer of ISO BMFF boxes (big-endian fields, a box's size filled in when it closes),
/// reused from fragment to fragment: `reset()` keeps its capacity, so once it has grown to a
/// fragment's size nothing more is allocated.
struct MP4BoxBuffer {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func u24(_ value: UInt32) {
        bytes.append(UInt8((value >> 16) & 0xFF))
        u16(UInt16(value & 0xFFFF))
    }

    mutating func u32(_ value: UInt32) {
        u16(UInt16(value >> 16))
        u16(UInt16(value & 0xFFFF))
    }

    mutating func u64(_ value: UInt64) {
        u32(UInt32(value >> 32))
        u32(UInt32(value & 0xFFFF_FFFF))
    }

    /// A four-character code (a box type, a brand, a handler).
    mutating func fourCC(_ code: StaticString) {
        precondition(code.utf8CodeUnitCount == 4, "a four-character code")
        code.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func zeros(_ count: Int) {
        for _ in 0..<count { bytes.append(0) }
    }

    mutating func append(_ other: some Collection<UInt8>) {
        bytes.append(contentsOf: other)
    }

    /// The identity matrix of `mvhd` and `tkhd` (16.16 and 2.30 fixed point).
    mutating func unityMatrix() {
        for value: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { u32(value) }
    }

    /// Writes a box of `type` whose body `body` writes; `version`/`flags` make it a full box.
    mutating func box(_ type: StaticString, version: UInt8? = nil, flags: UInt32 = 0, _ body: (inout MP4BoxBuffer) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        if let version {
            u8(version)
            u24(flags)
        }
        body(&self)
        patchU32(at: start, UInt32(bytes.count - start))
    }

    /// Overwrites four bytes at `offset` (a size or an offset known only later).
    mutating func patchU32(at offset: Int, _ value: UInt32) {
        bytes[offset] = UInt8(value >> 24)
        bytes[offset + 1] = UInt8((value >> 16) & 0xFF)
        bytes[offset + 2] = UInt8((value >> 8) & 0xFF)
        bytes[offset + 3] = UInt8(value & 0xFF)
    }
}
