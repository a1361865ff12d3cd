import Dispatch
import Libav
import Synchronization

/// The live page's event thumbnails (`/api/events/ID/thumbnail.jpg`): each event's first picture (its
/// clip's first IDR), decoded and shrunk to at most 320 pixels wide on a queue of its own when the event
/// starts, never on the recording's threads. The newest 200 are kept (about 15 KB each); at most 4 wait
/// to be made, past that an event goes without one.
public final class EventThumbnails: Sendable {
    private let hevc: Bool
    private let queue = DispatchQueue(label: "camrec.thumbnails")
    private let state = Mutex<(waiting: Int, made: [(id: Int, jpeg: [UInt8])])>((0, []))
    public static let kept = 200
    public static let maximumWaiting = 4
    public static let maximumWidth = 320

    /// - Parameter hevc: the events' stream is H.265 (else H.264).
    public init(hevc: Bool) {
        self.hevc = hevc
    }

    /// Makes event `id`'s thumbnail from its first access unit (an IDR with its parameter sets).
    public func make(eventID id: Int, accessUnit: [UInt8]) {
        let admitted = state.withLock { s -> Bool in
            guard s.waiting < Self.maximumWaiting else { return false }
            s.waiting += 1
            return true
        }
        guard admitted else { return }
        queue.async { [self] in
            let jpeg = try? PictureSnapshot.jpeg(accessUnits: [accessUnit], hevc: hevc, quality: 5, maximumWidth: Self.maximumWidth)
            state.withLock { s in
                s.waiting -= 1
                guard let jpeg else { return }
                if s.made.count >= Self.kept { s.made.removeFirst(s.made.count - Self.kept + 1) }
                s.made.append((id, jpeg))
            }
        }
    }

    /// Event `id`'s thumbnail; nil when it is not made (yet), or no longer kept.
    public func jpeg(eventID id: Int) -> [UInt8]? {
        state.withLock { s in s.made.last { $0.id == id }?.jpeg }
    }
}
