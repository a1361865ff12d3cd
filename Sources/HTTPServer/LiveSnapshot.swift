import Dispatch
import Libav
import Synchronization

/// `/snapshot.jpg`: the newest picture, decoded from the held picture group and encoded as JPEG
/// only when asked, one at a time on a queue of its own (never on the server's event loops, never
/// on the recording's threads). Asking again for the same frame gets the same JPEG.
final class LiveSnapshot: Sendable {
    enum Failure: Error {
        /// Too many snapshots are being made or waited for.
        case busy
        /// No IDR arrived in time (the recording has not started, or has ended).
        case noPicture
        case failed(String)
    }

    private let live: LiveViewOutput
    private let queue = DispatchQueue(label: "camrec.snapshot")
    private let waiting = Atomic<Int>(0)
    private let newest = Mutex<(sequence: UInt64, jpeg: [UInt8])?>(nil)
    static let maximumWaiting = 4

    init(live: LiveViewOutput) {
        self.live = live
    }

    /// The JPEG and the source frame number of the picture in it.
    func jpeg() async throws(Failure) -> (sequence: UInt64, jpeg: [UInt8]) {
        guard waiting.add(1, ordering: .relaxed).newValue <= Self.maximumWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            throw .busy
        }
        defer { waiting.subtract(1, ordering: .relaxed) }
        var group = live.newestPictureGroup
        if group == nil, let hub = live.hub,
           let next = hub.subscribe("snapshot", from: .nextIDR, policy: .skipToIDR(depth: 2), askForIDR: true) {
            // Nothing held yet (or a picture group too long to hold): wait up to 3 s for the IDR asked for.
            let timer = Task {
                try? await Task.sleep(for: .seconds(3))  // a deadline, not a poll: cancelled once the IDR came
                next.cancel()
            }
            if let idr = await next.nextAsync() {
                idr.release()
                group = live.newestPictureGroup
            }
            timer.cancel()
            next.cancel()
        }
        guard let group else { throw .noPicture }
        if let cached = newest.withLock({ $0 }), cached.sequence == group.sequence { return cached }
        let result: Result<[UInt8], Failure> = await withCheckedContinuation { continuation in
            queue.async {
                do {
                    continuation.resume(returning: .success(try PictureSnapshot.jpeg(accessUnits: group.accessUnits)))
                } catch {
                    continuation.resume(returning: .failure(.failed("\(error)")))
                }
            }
        }
        let jpeg = try result.get()
        newest.withLock { $0 = (group.sequence, jpeg) }
        return (group.sequence, jpeg)
    }
}
