import Hub
import NetStream

/// How a `PeerSender` reaches its peer: a media-server
/// session written by libavformat (RTSP, RTMP, SRT). Called from the sender's thread only.
/// The connection is made with the first access unit (the server needs SPS and PPS to announce
/// the stream): until something has been sent, the peer has not been reached, and a failure is a
/// failed attempt to connect.
public protocol PeerTransport: AnyObject {
    /// Who is at the other end, for log lines (never with credentials).
    var peerAddress: String { get }
    /// Sends one access unit (it starts with SPS+PPS+IDR on a new connection). Waits no longer
    /// than `stallTimeoutMilliseconds` without progress, and gives up as soon as `abort` says so,
    /// throwing `SocketError` with `.timedOut` or `.canceled`.
    func send(_ chunk: StreamChunk, stallTimeoutMilliseconds: Int, abort: () -> Bool) throws
    /// False once the peer has closed its side; reads and discards what it sends.
    func isOpen() throws -> Bool
    /// Ends the session (a trailer, a shutdown), then frees it; `abort` bounds any wait. `pause` waits
    /// up to the nanoseconds given, and returns at once when `abort` comes to say so.
    func close(abort: () -> Bool, pause: (UInt64) -> Void)
}
