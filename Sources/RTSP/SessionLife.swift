/// One RTSP session's sign-of-life clock and what its client's RTCP says (RFC 2326 §12.37, RFC 3550
/// §6.4.2). A request restarts the clock, and so does an RTCP compound packet that parses (a UDP client
/// may send nothing else); bytes on the RTCP channel that are not RTCP are counted and restart nothing.
/// Pure (the times are given), so the timeout's rule is tested without waiting for it.
public struct SessionLife: Sendable {
    public let timeoutNanoseconds: UInt64
    public private(set) var lastLife: UInt64
    /// RTCP compound packets from the client that parsed.
    public private(set) var receiverReports = 0
    /// Datagrams or interleaved frames on the RTCP channel that were not RTCP (or over 64 KiB).
    public private(set) var ignored = 0
    /// The newest report block about the stream this session sends (its SSRC).
    public private(set) var newest: RTCP.ReceptionReport?
    /// The most bytes one RTCP datagram or interleaved frame can hold.
    public static let maximumRTCPBytes = 65_535

    public init(timeoutSeconds: Int, now: UInt64) {
        timeoutNanoseconds = UInt64(max(1, timeoutSeconds)) * 1_000_000_000
        lastLife = now
    }

    /// A request, or any bytes on the RTSP connection: the client is there.
    public mutating func alive(at now: UInt64) {
        lastLife = max(lastLife, now)
    }

    /// RTCP from the client about the stream `ssrc`; returns whether it was RTCP.
    @discardableResult
    public mutating func rtcp(_ bytes: some Collection<UInt8>, ssrc: UInt32, at now: UInt64) -> Bool {
        guard bytes.count <= Self.maximumRTCPBytes, let reports = RTCP.receptionReports(in: bytes) else {
            ignored += 1
            return false
        }
        receiverReports += 1
        if let block = reports.last(where: { $0.ssrc == ssrc }) { newest = block }
        alive(at: now)
        return true
    }

    /// Whether the timeout has passed since the last sign of life. A sign noted after `now` was read
    /// (another thread) is not an expiry.
    public func expired(at now: UInt64) -> Bool {
        now > lastLife && now - lastLife > timeoutNanoseconds
    }
}
