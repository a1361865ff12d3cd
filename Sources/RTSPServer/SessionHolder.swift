import Synchronization

/// Holds the session for the RTCP socket's handler, which exists before it.
final class SessionHolder: Sendable {
    let session = Mutex<RTSPSession?>(nil)
}
