import Hub
import Synchronization

/// The outputs of one recording, each with the hub of the encoding it takes: opened before capture
/// starts (so a bad path fails before the camera is touched) and finished after the hubs have
/// closed. The recorder only publishes into the hubs; this is all that knows the outputs.
public final class OutputSet: Sendable {
    public let members: [(output: StreamOutput, hub: StreamHub)]
    private struct Opened {
        var outputs: [StreamOutput] = []
        /// Outputs before this index have been finished (or are finishing).
        var finished = 0
    }
    private let opened = Mutex(Opened())

    public init(_ members: [(output: StreamOutput, hub: StreamHub)]) {
        self.members = members
    }

    public var outputs: [StreamOutput] { members.map(\.output) }

    /// Opens every output in order; `onFailure` hears of one that fails later, while recording.
    /// On a failure, those already opened are finished (their hubs closed) before it is thrown.
    public func open(onFailure: @escaping @Sendable (OutputError) -> Void) throws(OutputError) {
        for (output, hub) in members {
            do {
                try output.open(hub: hub, onFailure: onFailure)
                opened.withLock { $0.outputs.append(output) }
            } catch {
                _ = finish()
                throw error as? OutputError ?? OutputError(.unwritable, "\(output.label): \(error)")
            }
        }
    }

    /// Closes every hub (the end of the stream; a no-op when the recorder already has), then lets
    /// each opened output write out what it holds and settle. Safe to call more than once.
    public func finish() -> [OutputReport] {
        for (_, hub) in members { hub.close() }
        // The outputs stay listed while they finish, so a second interrupt (`abandon`) still reaches them.
        let outputs = opened.withLock { o -> [StreamOutput] in
            defer { o.finished = o.outputs.count }
            return Array(o.outputs[o.finished...])
        }
        return outputs.map { $0.finish() }
    }

    /// "Stop waiting" after a second interrupt: outputs that could block the shutdown for ever
    /// (stdout into a pipe nobody reads) give up what they still hold; files finish as usual.
    public func abandon() {
        for output in opened.withLock({ $0.outputs }) { output.abandon() }
    }
}
