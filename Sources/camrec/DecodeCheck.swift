import Bitstream
import NetStream
import Receiver

/// `camrec inspect --decode`: runs libavcodec's H.264 or H.265 decoder (the codec given, or
/// recognised from the first NAL unit) over every access unit of a file and counts what it reports, so a stream cut inside a slice or with damaged slice
/// data is caught (the inspector reads headers only). Holds one access unit at a time.
struct DecodeCheck {
    private var assembler: AccessUnitAssembler
    /// Opened for the stream's codec when its first access unit is whole.
    private var decoder: VideoDecoder?
    private(set) var accessUnits = 0
    private(set) var decodedPictures = 0
    private(set) var failedAccessUnits = 0
    private(set) var firstError: (accessUnit: Int, text: String)?

    /// Opens the decoder now when the codec is given, else tries both: a libavcodec without the
    /// one needed fails before anything is read.
    init(codec: VideoCodec?) throws {
        assembler = AccessUnitAssembler(codec: codec)
        if let codec {
            decoder = try Self.openDecoder(codec)
        } else {
            for codec in VideoCodec.allCases { _ = try Self.openDecoder(codec) }
        }
        VideoDecoder.setLibraryLogging(verbose: false)  // its errors are counted and reported here
    }

    private static func openDecoder(_ codec: VideoCodec) throws -> VideoDecoder {
        do {
            return try VideoDecoder(codec: codec)
        } catch {
            printError("--decode: \(error)")
            throw ReportedFailure(status: .encoderUnavailable)
        }
    }

    mutating func append(_ bytes: ArraySlice<UInt8>) throws {
        for unit in assembler.append(bytes) { try decode(unit) }
    }

    mutating func finish() throws -> DecodeCheck {
        for unit in assembler.finish() { try decode(unit) }
        if let tail = decoder?.flush() {
            decodedPictures += tail.frames
            if let error = tail.error { note(error) }
        }
        return self
    }

    func isClean(pictures: Int) -> Bool { failedAccessUnits == 0 && decodedPictures >= pictures }

    /// One line: what the decoder made of the pictures the inspector counted.
    func verdict(pictures: Int) -> String {
        if isClean(pictures: pictures) {
            return "checked: NAL units, start codes, parameter sets and slice headers, and libavcodec decoded all \(decodedPictures) pictures without an error"
        }
        var line = "decode: BROKEN — libavcodec decoded \(decodedPictures) of \(pictures) pictures; \(failedAccessUnits) access unit\(failedAccessUnits == 1 ? "" : "s") failed"
        if let firstError { line += "; first at access unit \(firstError.accessUnit): \(firstError.text)" }
        return line
    }

    private mutating func decode(_ unit: ReceivedAccessUnit) throws {
        accessUnits += 1
        let codec = assembler.codec ?? .h264
        guard unit.units.contains(where: { codec.role(ofType: codec.typeValue(of: $0.bytes)).isVCL }) else { return }
        if decoder == nil { decoder = try Self.openDecoder(codec) }
        let result = decoder!.decode(unit.annexB())
        decodedPictures += result.frames
        if let error = result.error { note(error) }
    }

    private mutating func note(_ error: String) {
        failedAccessUnits += 1
        if firstError == nil { firstError = (accessUnits - 1, error) }
    }
}
