import Hummingbird

/// What `/api/status` answers (and the page shows): the recording as it is now.
public struct LiveStatus: ResponseEncodable, Sendable {
    public var source: String
    public var width: Int
    public var height: Int
    public var framesPerSecond: Double
    public var encoder: String
    public var frames: Int
    public var dropped: Int
    public var bytes: Int
    public var uptimeSeconds: Double
    /// Browsers on the live page.
    public var viewers = 0
    /// Receivers of the other network outputs (TCP, media servers) connected now.
    public var receivers = 0
    /// "present", or "lost" while `--on-camera-lost wait` waits for it to come back.
    public var camera = "present"
    /// Since when the camera has been lost (Unix time, seconds); nil while it is present.
    public var cameraLostSince: Double?
    /// Times the camera went away, and came back, during this recording.
    public var cameraLosses = 0
    public var cameraReturns = 0

    public init(source: String, width: Int, height: Int, framesPerSecond: Double, encoder: String,
                frames: Int, dropped: Int, bytes: Int, uptimeSeconds: Double, receivers: Int) {
        self.receivers = receivers
        self.source = source
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.encoder = encoder
        self.frames = frames
        self.dropped = dropped
        self.bytes = bytes
        self.uptimeSeconds = uptimeSeconds
    }
}
