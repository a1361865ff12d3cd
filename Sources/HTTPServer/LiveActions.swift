import Hummingbird
import Outputs

/// What a page or a script may ask of the recording over HTTP (`POST /api/keyframe`, `POST /api/rotate`).
public struct LiveActions: Sendable {
    /// Asks the encoder for an IDR; false when one was asked for (by anyone) less than a second ago.
    public var keyframe: @Sendable () -> Bool
    /// Starts new files, as SIGHUP does; returns how many file outputs will move to a new file.
    public var rotate: @Sendable () -> Int

    /// Starts or extends an event with an optional label (`POST /api/events`); nil without --event-output.
    public var event: (@Sendable (_ label: String?) -> EventRecorder.Outcome)?
    /// The events so far, oldest first (`GET /api/events`).
    public var events: @Sendable () -> [EventRecorder.Event]
    /// Each event's first picture, small (`GET /api/events/ID/thumbnail.jpg`); nil without --event-output.
    public var thumbnails: EventThumbnails?

    public init(keyframe: @escaping @Sendable () -> Bool, rotate: @escaping @Sendable () -> Int,
                event: (@Sendable (_ label: String?) -> EventRecorder.Outcome)? = nil,
                events: @escaping @Sendable () -> [EventRecorder.Event] = { [] }, thumbnails: EventThumbnails? = nil) {
        self.keyframe = keyframe
        self.rotate = rotate
        self.event = event
        self.events = events
        self.thumbnails = thumbnails
    }
}

/// The JSON answer of an action: whether it was done, and one line saying what happened.
struct ActionAnswer: ResponseEncodable {
    let done: Bool
    let message: String
}

/// `POST /api/events`'s answer: what was done, and the event as it is now.
struct EventAnswer: ResponseEncodable {
    let done: Bool
    let message: String
    let event: EventRecorder.Event?
}

/// `GET /api/events`: every event of this run still kept, oldest first.
struct EventListing: ResponseEncodable {
    let events: [EventRecorder.Event]
}
