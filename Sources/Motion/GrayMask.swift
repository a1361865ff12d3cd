/// A motion mask drawn as a picture, from a PGM file (`P5` binary or `P2` text, as GIMP, ImageMagick
/// and netpbm write them): dark pixels (below half the image's maximum value) hide, light ones are
/// watched. It is stretched over the frame, so a mask drawn on a snapshot of any size fits.
public struct GrayMask: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// Row by row: true where nothing counts.
    public let hidden: [Bool]

    /// The largest mask read: 8192 pixels a side (a mask needs no more than one pixel per cell).
    public static let maximumSide = 8192

    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    public init(width: Int, height: Int, hidden: [Bool]) {
        precondition(width > 0 && height > 0 && hidden.count == width * height, "a mask's pixels fill it")
        (self.width, self.height, self.hidden) = (width, height, hidden)
    }

    /// Parses a whole PGM file; every field is checked against the bytes that are there.
    public init(pgm bytes: [UInt8]) throws(Malformed) {
        var reader = HeaderReader(bytes: bytes)
        let magic = reader.token()
        guard magic == "P5" || magic == "P2" else {
            throw Malformed(description: "not a PGM image (it must begin with P5 or P2; convert it with 'convert mask.png mask.pgm')")
        }
        guard let width = reader.number(), let height = reader.number(), let maximum = reader.number(),
              (1...Self.maximumSide).contains(width), (1...Self.maximumSide).contains(height), (1...65535).contains(maximum) else {
            throw Malformed(description: "a PGM header needs a width and height of 1 to \(Self.maximumSide) and a maximum value of 1 to 65535")
        }
        let count = width * height
        var hidden = [Bool](repeating: false, count: count)
        let half = (maximum + 1) / 2
        if magic == "P5" {
            // One whitespace byte ends the header; then 1 byte a sample, or 2 (big-endian) above 255.
            let start = reader.offset + 1
            let sampleBytes = maximum > 255 ? 2 : 1
            guard start <= bytes.count, bytes.count - start >= count * sampleBytes else {
                throw Malformed(description: "the PGM image is \(width)x\(height) but its pixels are cut short")
            }
            for i in 0..<count {
                let value = sampleBytes == 1 ? Int(bytes[start + i])
                    : Int(bytes[start + 2 * i]) << 8 | Int(bytes[start + 2 * i + 1])
                hidden[i] = value < half
            }
        } else {
            for i in 0..<count {
                guard let value = reader.number(), value <= maximum else {
                    throw Malformed(description: "the PGM image is \(width)x\(height) but pixel \(i + 1) is missing or above its maximum \(maximum)")
                }
                hidden[i] = value < half
            }
        }
        self.init(width: width, height: height, hidden: hidden)
    }

    /// Whether the frame's pixel (x, y) is hidden, the mask stretched over a frame of `frameWidth` x `frameHeight`.
    public func hides(x: Int, y: Int, frameWidth: Int, frameHeight: Int) -> Bool {
        let column = min(width - 1, max(0, x * width / max(1, frameWidth)))
        let row = min(height - 1, max(0, y * height / max(1, frameHeight)))
        return hidden[row * width + column]
    }

    /// Netpbm's header: tokens split by whitespace, `#` comments to the end of a line.
    private struct HeaderReader {
        let bytes: [UInt8]
        var offset = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func token() -> String? {
            skipSpaceAndComments()
            let start = offset
            while offset < bytes.count, !Self.isSpace(bytes[offset]), bytes[offset] != UInt8(ascii: "#"), offset - start < 16 { offset += 1 }
            return offset > start ? String(decoding: bytes[start..<offset], as: UTF8.self) : nil
        }

        /// A decimal of at most 6 digits (65535 is the largest value any field takes).
        mutating func number() -> Int? {
            guard let text = token(), text.utf8.count <= 6, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            return Int(text)
        }

        private mutating func skipSpaceAndComments() {
            while offset < bytes.count {
                if Self.isSpace(bytes[offset]) {
                    offset += 1
                } else if bytes[offset] == UInt8(ascii: "#") {
                    while offset < bytes.count, bytes[offset] != UInt8(ascii: "\n") { offset += 1 }
                } else {
                    return
                }
            }
        }

        private static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C
        }
    }
}
