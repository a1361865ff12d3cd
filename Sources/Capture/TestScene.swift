import Frames

/// The picture of `--test-scene`: a still room with sensor-like noise in which, every 30 s, an
/// object crosses from 10 s to 15 s and the lights are on from 20 s to 30 s. Motion detection and
/// event clips are tested against it: which frames hold motion follows from the frame number
/// alone (`objectFrames`, `lightsFrames`), and the test pattern's counter is burned in on top.
public struct TestScene: Sendable {
    public static let periodSeconds = 30.0
    public static let objectEntersSeconds = 10.0
    public static let objectLeavesSeconds = 15.0
    public static let lightsOnSeconds = 20.0
    /// Noise of each luma sample, new every frame: one of these eight, equally likely (mean 0,
    /// at most 3 either way).
    public static let noise = [-3, -2, -1, 0, 0, 1, 2, 3]
    public static let noiseAmplitude = 3
    /// How much brighter every luma sample is with the lights on.
    public static let lightsStep = 60

    public let width: Int
    public let height: Int
    /// Frames of one period, and where in it (frame number modulo the period) the events are.
    public let periodFrames: UInt64
    public let objectFrames: Range<UInt64>
    public let lightsFrames: Range<UInt64>

    public init(size: FrameSize, fps: Double) {
        width = size.width
        height = size.height
        func frame(_ seconds: Double) -> UInt64 { UInt64((seconds * fps).rounded()) }
        periodFrames = max(1, frame(Self.periodSeconds))
        objectFrames = frame(Self.objectEntersSeconds)..<frame(Self.objectLeavesSeconds)
        lightsFrames = frame(Self.lightsOnSeconds)..<periodFrames
    }

    /// Row `y` of the room without noise, written into `row`: a wall darkening towards a floor line,
    /// a floor, and two pieces of furniture. Drawn each frame (no plane kept: any size costs no memory).
    private func drawRoom(row: UnsafeMutablePointer<UInt8>, y: Int, lit: Bool) {
        let (w, h) = (width, height)
        let light = lit ? Self.lightsStep : 0
        func fill(from: Int, to: Int, _ value: Int) {
            let x0 = max(0, from), x1 = min(w, to)
            if x1 > x0 { (row + x0).update(repeating: UInt8(min(235, value + light)), count: x1 - x0) }
        }
        fill(from: 0, to: w, y < h * 2 / 3 ? 110 - 40 * y / max(1, h) : 60)
        if y > h / 2 && y < h * 5 / 6 { fill(from: w / 10 + 1, to: w / 4, 85) }
        if y > h * 3 / 5 && y < h * 3 / 4 { fill(from: w * 3 / 5 + 1, to: w * 9 / 10, 45) }
    }

    /// Where the object is in frame `frame` (nil when it is not in the picture): a square a third
    /// of the height tall at mid-height, its left edge moving from off the left to off the right.
    public func objectRectangle(frame: UInt64) -> (x: Int, y: Int, size: Int)? {
        let phase = frame % periodFrames
        guard objectFrames.contains(phase) else { return nil }
        let side = max(4, height / 3)
        // Part of it is in the picture from the first of its frames to the last.
        let travel = Double(phase - objectFrames.lowerBound + 1) / Double(objectFrames.count + 1)
        return (x: -side + Int(travel * Double(width + side)), y: (height - side) / 2, size: side)
    }

    public func lightsOn(frame: UInt64) -> Bool { lightsFrames.contains(frame % periodFrames) }

    public func draw(frame: UInt64, into buffer: PixelBuffer) {
        let luma = buffer.planes[0]
        var random = (frame &+ 1) &* 0x9E37_79B9_7F4A_7C15
        let lit = lightsOn(frame: frame)
        for y in 0..<height {
            let row = luma.base + y * luma.stride
            drawRoom(row: row, y: y, lit: lit)
            var bits: UInt64 = 0
            for x in 0..<width {
                if x & 7 == 0 {
                    // xorshift64: fresh noise every frame, one step for eight samples.
                    random ^= random << 13
                    random ^= random >> 7
                    random ^= random << 17
                    bits = random
                }
                row[x] = UInt8(clamping: min(235, max(16, Int(row[x]) + Self.noise[Int(bits & 7)])))
                bits >>= 8
            }
        }
        if let object = objectRectangle(frame: frame) {
            let x0 = max(0, object.x), x1 = min(width, object.x + object.size)
            if x1 > x0 {
                for y in max(0, object.y)..<min(height, object.y + object.size) {
                    // Stripes, so the object has texture a detector can follow.
                    let value: UInt8 = (y / 8) % 2 == 0 ? 200 : 170
                    (luma.base + y * luma.stride + x0).update(repeating: value, count: x1 - x0)
                }
            }
        }
        drawChroma(frame: frame, buffer: buffer)
    }

    /// A faint warm tint everywhere, the object red.
    private func drawChroma(frame: UInt64, buffer: PixelBuffer) {
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        let object = objectRectangle(frame: frame)
        let objectColumns = object.map { max(0, $0.x / 2)..<max(0, min(chromaWidth, ($0.x + $0.size + 1) / 2)) } ?? 0..<0
        let objectRows = object.map { max(0, $0.y / 2)..<max(0, min(chromaHeight, ($0.y + $0.size + 1) / 2)) } ?? 0..<0
        let (u, v): (UInt8, UInt8) = (120, 136)
        let (objectU, objectV): (UInt8, UInt8) = (100, 200)
        for y in 0..<chromaHeight {
            let inObjectRow = objectRows.contains(y)
            switch buffer.format {
            case .nv12:
                let row = buffer.planes[1].base + y * buffer.planes[1].stride
                for x in 0..<chromaWidth {
                    let inObject = inObjectRow && objectColumns.contains(x)
                    row[2 * x] = inObject ? objectU : u
                    row[2 * x + 1] = inObject ? objectV : v
                }
            case .i420:
                let rowU = buffer.planes[1].base + y * buffer.planes[1].stride
                let rowV = buffer.planes[2].base + y * buffer.planes[2].stride
                for x in 0..<chromaWidth {
                    let inObject = inObjectRow && objectColumns.contains(x)
                    rowU[x] = inObject ? objectU : u
                    rowV[x] = inObject ? objectV : v
                }
            case .yuyv, .uyvy:
                preconditionFailure("pool buffers are never packed 4:2:2")
            }
        }
    }
}
