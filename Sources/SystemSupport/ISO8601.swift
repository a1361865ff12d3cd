import Glibc

/// A wall-clock time (seconds since 1970) in UTC as ISO 8601, to the millisecond (truncated):
/// `2026-11-27T18:01:02.345Z`, as HLS's `EXT-X-PROGRAM-DATE-TIME` and the event list give it.
public func iso8601UTC(_ seconds: Double) -> String {
    let whole = seconds.rounded(.down)
    return iso8601UTC(wholeSeconds: Int(whole), milliseconds: min(999, Int((seconds - whole) * 1000)))
}

/// Now (CLOCK_REALTIME), as `iso8601UTC`.
public func iso8601UTCNow() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return iso8601UTC(wholeSeconds: now.tv_sec, milliseconds: now.tv_nsec / 1_000_000)
}

private func iso8601UTC(wholeSeconds: Int, milliseconds: Int) -> String {
    var whole = time_t(wholeSeconds)
    var parts = tm()
    gmtime_r(&whole, &parts)
    func two(_ value: Int32) -> String { String(value).leftPadded(to: 2) }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
        + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(String(milliseconds).leftPadded(to: 3))Z"
}
