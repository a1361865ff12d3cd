import Encoder
import CFFmpeg
import Libav

/// What a muxer needs to describe an encoded sound track (codec, rate, channels, the AAC
/// AudioSpecificConfig or the OpusHead, the encoder's priming), copied from the encoder when it opened; immutable.
public final class AudioTrackFormat: Sendable {
    public let format: AudioFormat
    /// Samples the encoder put before the first real one; players drop them.
    public let primingSamples: Int
    public let codec: SoundCodec
    public var codecName: String { codec.displayName }
    /// The AVCodecParameters, as an address (a plain value, like a file descriptor): written in `init`,
    /// then only read, by any number of threads at once, until `deinit` frees them.
    private let parametersAddress: UInt
    private var parameters: UnsafeMutablePointer<AVCodecParameters> { UnsafeMutablePointer(bitPattern: parametersAddress)! }

    init(context: UnsafeMutablePointer<AVCodecContext>, format: AudioFormat, codec: SoundCodec) throws {
        let codecName = codec.displayName
        guard let parameters = avcodec_parameters_alloc() else {
            throw EncoderError(.unavailable, "out of memory describing the \(codecName) track")
        }
        let status = avcodec_parameters_from_context(parameters, context)
        guard status >= 0 else {
            var freed: UnsafeMutablePointer<AVCodecParameters>? = parameters
            avcodec_parameters_free(&freed)
            throw EncoderError(.unavailable, "describing the \(codecName) track failed: \(libavErrorDescription(status))")
        }
        parametersAddress = UInt(bitPattern: parameters)
        self.format = format
        self.codec = codec
        primingSamples = Int(context.pointee.initial_padding)
    }

    deinit {
        var freed: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&freed)
    }

    /// The encoder's out-of-band header: the AAC AudioSpecificConfig (what an RTSP server's SDP names as
    /// `config=`), or the OpusHead.
    public var codecConfiguration: [UInt8] {
        guard let data = parameters.pointee.extradata, parameters.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(parameters.pointee.extradata_size)))
    }

    /// Describes `stream` as this track. Returns libavcodec's status.
    public func describe(_ stream: UnsafeMutablePointer<AVStream>) -> Int32 {
        avcodec_parameters_copy(stream.pointee.codecpar, parameters)
    }
}
