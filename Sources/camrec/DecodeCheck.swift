import NetStream
import Receiver

/// `camrec inspect --decode`: runs libavcodec's H.264 decoder over every access unit of a
/// file and counts what it reports, so a stream cut inside a slice or with damaged slice
/// data is caught (the inspector reads headers only). Holds one access unit at a time.
struct DecodeCheck {
    private var assembler = AccessUnitAssembler()
    private let decoder: H264Decoder
    private(set) var accessUnits = 0
    private(set) var decodedPictures = 0
    private(set) var failedAccessUnits = 0
    private(set) var firstError: (accessUnit: Int, text: String)?

    init() throws {
        do {
            decoder = try H264Decoder()
            H264Decoder.setLibraryLogging(verbose: false)  // its errors are counted and reported here
        } catch {
            printError("--decode: \(error)")
            throw ReportedFailure(status: .encoderUnavailable)
        }
    }

    mutating func append(_ bytes: ArraySlice<UInt8>) {
        for unit in assembler.append(bytes) { decode(unit) }
    }

    mutating func finish() -> DecodeCheck {
        for unit in assembler.finish() { decode(unit) }
        let tail = decoder.flush()
        decodedPictures += tail.frames
        if let error = tail.error { note(error) }
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

    private mutating func decode(_ unit: ReceivedAccessUnit) {
        accessUnits += 1
        guard unit.units.contains(where: { $0.type.isVCL }) else { return }
        let result = decoder.decode(unit.annexB())
        decodedPictures += result.frames
        if let error = result.error { note(error) }
    }

    private mutating func note(_ error: String) {
        failedAccessUnits += 1
        if firstError == nil { firstError = (accessUnits - 1, error) }
    }
}
