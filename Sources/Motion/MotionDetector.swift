import Frames

/// Motion in the picture, from the luma plane of each pool buffer before it is encoded, with no copy
/// of the frame: the picture is read as a grid of 16x16-pixel cells, each cell's brightness the mean
/// of 16 samples (every fourth pixel of every fourth row), about 130 000 reads for a 1080p frame.
///
/// Each cell is compared with a learned background (it follows the picture by 1/8 of the difference
/// per frame, so a thing that stops becomes background within a second, and the trail a passing
/// thing leaves fades within about ten frames). What the whole
/// picture does together is not motion: when more than `globalFraction` of the cells differ from the
/// background (the lights switched on, a camera's day/night switch) the background is learned again
/// from this frame, whatever else moved in it (an overlay the lights do not brighten, a fan); below
/// that, the mean difference over the cells is taken off first (auto-exposure drifting), and when more
/// than `globalFraction` still differ the background is learned again as well. Motion is at least
/// `minimumArea` of the unmasked cells differing by more than `threshold`, in `framesToConfirm` frames
/// in a row (one noisy frame is no event), so steady change over that area (a clock overlay, a fan)
/// is motion in every frame: a user masks it.
public final class MotionDetector {
    public struct Settings: Sendable, Equatable {
        /// Luma levels (0-255) a cell must differ from the background, once the picture's mean change is off.
        public var threshold: Int
        /// Fraction of the unmasked cells that must differ.
        public var minimumArea: Double
        /// More than this fraction differing is a change of the whole picture, never motion.
        public var globalFraction: Double
        public var framesToConfirm: Int
        /// Rectangles (x, y, width, height, in pixels) where nothing counts.
        public var mask: [Rectangle]
        /// A drawn mask, stretched over the picture: where it is dark nothing counts.
        public var maskImage: GrayMask?

        public init(threshold: Int = Self.defaultThreshold, minimumArea: Double = Self.defaultMinimumArea,
                    globalFraction: Double = 0.5, framesToConfirm: Int = 2, mask: [Rectangle] = [],
                    maskImage: GrayMask? = nil) {
            self.threshold = max(1, min(threshold, 255))
            self.minimumArea = minimumArea.isFinite ? max(0, min(minimumArea, 1)) : Self.defaultMinimumArea
            self.globalFraction = globalFraction.isFinite ? max(0, min(globalFraction, 1)) : 0.5
            self.framesToConfirm = max(1, min(framesToConfirm, 1000))
            self.mask = mask
            self.maskImage = maskImage
        }

        public static let defaultThreshold = 12
        public static let defaultMinimumArea = 0.005
    }

    public struct Rectangle: Sendable, Equatable {
        public var x, y, width, height: Int
        public init(x: Int, y: Int, width: Int, height: Int) {
            (self.x, self.y, self.width, self.height) = (x, y, width, height)
        }
    }

    /// What one frame showed.
    public enum Verdict: Sendable, Equatable {
        /// The first frame: the background is learned from it.
        case learning
        case still(score: Double)
        /// Changed cells over `minimumArea` in enough frames in a row.
        case motion(score: Double)
        /// The whole picture changed (the score: the share of cells that differ); the background starts
        /// again from this frame.
        case globalChange(score: Double)
    }

    public static let cellSize = 16
    public let settings: Settings
    public let columns: Int
    public let rows: Int
    /// Per cell: the background brightness times 16 (fixed point), and whether the mask covers it.
    private var background: [Int32]
    private var current: [Int32]
    private let masked: [Bool]
    /// The cells no mask covers; none means motion can never be seen (a usage error for the caller).
    public let countedCells: Int
    private var learned = false
    private var inARow = 0

    public init(width: Int, height: Int, settings: Settings = Settings()) {
        self.settings = settings
        columns = max(1, width / Self.cellSize)
        rows = max(1, height / Self.cellSize)
        background = Array(repeating: 0, count: columns * rows)
        current = background
        var masked = Array(repeating: false, count: columns * rows)
        for r in settings.mask {
            let size = Self.cellSize
            // A cell is masked when its centre is inside a rectangle.
            for row in 0..<rows where (row * size + size / 2) >= r.y && (row * size + size / 2) < r.y + r.height {
                for column in 0..<columns where (column * size + size / 2) >= r.x && (column * size + size / 2) < r.x + r.width {
                    masked[row * columns + column] = true
                }
            }
        }
        if let image = settings.maskImage {
            for row in 0..<rows {
                for column in 0..<columns where image.hides(x: column * Self.cellSize + Self.cellSize / 2, y: row * Self.cellSize + Self.cellSize / 2,
                                                            frameWidth: width, frameHeight: height) {
                    masked[row * columns + column] = true
                }
            }
        }
        self.masked = masked
        countedCells = masked.filter { !$0 }.count
    }

    /// Looks at one frame's luma (8 bits a sample, `stride` bytes a row); allocates nothing.
    public func look(luma: UnsafePointer<UInt8>, stride: Int) -> Verdict {
        let size = Self.cellSize
        // Each cell: 16 samples at (2 + 4i, 2 + 4j); the sum is 16 × the mean, the background's scale.
        current.withUnsafeMutableBufferPointer { cells in
            for row in 0..<rows {
                for column in 0..<columns {
                    var sum: Int32 = 0
                    var line = luma + (row * size + 2) * stride + column * size + 2
                    for _ in 0..<4 {
                        sum &+= Int32(line[0]) &+ Int32(line[4]) &+ Int32(line[8]) &+ Int32(line[12])
                        line += 4 * stride
                    }
                    cells[row * columns + column] = sum
                }
            }
        }
        guard learned, countedCells > 0 else {
            background = current
            learned = true
            return .learning
        }
        // The picture's mean change, and how many cells changed before it is taken off.
        let limit = settings.threshold * 16
        // Most of the picture changed at once (the lights): no motion, even where something did not
        // follow the change (an overlay stays as bright, so taking the mean off would make it differ).
        let atOnce = differing(by: 0, limit: limit)
        let changedAtOnceScore = Double(atOnce.cells) / Double(countedCells)
        if changedAtOnceScore > settings.globalFraction {
            background = current
            inARow = 0
            return .globalChange(score: changedAtOnceScore)
        }
        let changed = differing(by: atOnce.sum / countedCells, limit: limit).cells
        let score = Double(changed) / Double(countedCells)
        if score > settings.globalFraction {
            background = current
            inARow = 0
            return .globalChange(score: score)
        }
        // Follow the picture: 1/8 of the difference per frame.
        for i in 0..<current.count { background[i] += (current[i] - background[i]) / 8 }
        if score >= settings.minimumArea && changed > 0 {
            inARow += 1
            if inARow >= settings.framesToConfirm { return .motion(score: score) }
        } else {
            inARow = 0
        }
        return .still(score: score)
    }

    /// The unmasked cells differing from the background by more than `limit` once `shift` is taken
    /// off, and the sum of every unmasked cell's difference (with no shift taken off).
    private func differing(by shift: Int, limit: Int) -> (cells: Int, sum: Int) {
        var cells = 0
        var sum = 0
        for i in 0..<current.count where !masked[i] {
            let difference = Int(current[i] - background[i])
            sum += difference
            if difference - shift > limit || difference - shift < -limit { cells += 1 }
        }
        return (cells, sum)
    }

    /// Looks at a pool buffer's luma plane (NV12 and I420 both begin with it).
    public func look(at buffer: PixelBuffer) -> Verdict {
        let plane = buffer.planes[0]
        guard plane.width >= columns * Self.cellSize, plane.height >= rows * Self.cellSize else { return .learning }
        return look(luma: UnsafePointer(plane.base), stride: plane.stride)
    }
}
