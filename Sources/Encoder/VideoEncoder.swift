import Frames

/// One encoded access unit, as the backend produced it.
///
/// `data` is only valid during the `onPacket` callback; the stream writer copies
/// what it needs from it.
public struct EncodedPacket {
    public let data: UnsafeRawBufferPointer
    public let isKeyframe: Bool
    /// Sequence number of the source frame this packet encodes.
    public let sequence: UInt64
    public let presentationTimeNanoseconds: UInt64
    public let captureTimeNanoseconds: UInt64
}

/// An H.264 or H.265 encoder backend (libx264, libx265, VA-API), in the shape rpicam-apps uses:
/// one "encode this buffer" call and two callbacks, buffer done and output ready.
///
/// All calls come from one encoder thread. `onBufferDone` may be called from a
/// backend's own thread; it only recycles the buffer.
public protocol VideoEncoder: AnyObject {
    /// For logs and `camrec encoders`: "libx264 (software)".
    var name: String { get }
    /// The pool format this backend reads without another conversion.
    var inputFormat: PixelFormat { get }
    /// Buffers the backend may hold at once (the pool must be larger).
    var maximumBuffersInFlight: Int { get }
    var onBufferDone: ((PixelBuffer) -> Void)? { get set }
    var onPacket: ((EncodedPacket) -> Void)? { get set }

    func start() throws
    /// The pool the source fills for this encoder, made after `start()`. The default is an
    /// ordinary pool of `inputFormat`; the VA-API encoder's buffers are its mapped surfaces,
    /// so sources write each frame straight into GPU memory.
    func makePool(width: Int, height: Int, capacity: Int) -> PixelBufferPool
    /// SPS and PPS in Annex B known after `start()` (extradata written with global headers), for
    /// the stream writer to put before every IDR; nil when they come only in the stream.
    var parameterSets: [UInt8]? { get }
    /// Encodes one frame; with `forceKeyframe` the frame becomes an IDR.
    func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws
    /// Drains every frame still inside the encoder, so the last frames are not lost.
    func flush() throws
    /// Puts out every frame it holds and stays ready for more, the next one an IDR with its parameter
    /// sets: for a source that went away and may come back (the frames before the gap belong to the
    /// file that ends there).
    func finishPending() throws
    /// The camera encodes and this only passes its access units on (`CameraStreamEncoder`): the recorder
    /// calls it inline, with no encoder thread, and leaves the IDR period to the camera.
    var isPassthrough: Bool { get }
    /// A line for the info log once every frame is encoded (VA-API: how the frames were uploaded), or nil.
    var closingSummary: String? { get }
}

extension VideoEncoder {
    public var parameterSets: [UInt8]? { nil }
    public var isPassthrough: Bool { false }
    public var closingSummary: String? { nil }

    public func makePool(width: Int, height: Int, capacity: Int) -> PixelBufferPool {
        PixelBufferPool(format: inputFormat, width: width, height: height, capacity: capacity)
    }
}

/// Failures of an encoder backend.
public struct EncoderError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The backend can't run here (no libx264, no render node, no H.264 entrypoint…).
        case unavailable
        /// It started but failed while encoding.
        case failed
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
