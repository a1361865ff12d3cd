import Hummingbird

/// What a page or a script may ask of the recording over HTTP (`POST /api/keyframe`, `POST /api/rotate`).
public struct LiveActions: Sendable {
    /// Asks the encoder for an IDR; false when one was asked for (by anyone) less than a second ago.
    public var keyframe: @Sendable () -> Bool
    /// Starts new files, as SIGHUP does; returns how many file outputs will move to a new file.
    public var rotate: @Sendable () -> Int

    public init(keyframe: @escaping @Sendable () -> Bool, rotate: @escaping @Sendable () -> Int) {
        self.keyframe = keyframe
        self.rotate = rotate
    }
}

/// The JSON answer of an action: whether it was done, and one line saying what happened.
struct ActionAnswer: ResponseEncodable {
    let done: Bool
    let message: String
}
