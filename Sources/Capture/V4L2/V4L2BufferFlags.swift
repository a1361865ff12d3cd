import CV4L2
import Frames

/// `v4l2_buffer.flags`, the bits camrec reacts to.
struct V4L2BufferFlags: OptionSet, Sendable {
    let rawValue: UInt32

    static let mapped = Self(rawValue: UInt32(V4L2_BUF_FLAG_MAPPED))
    static let queued = Self(rawValue: UInt32(V4L2_BUF_FLAG_QUEUED))
    static let done = Self(rawValue: UInt32(V4L2_BUF_FLAG_DONE))
    /// The driver filled the buffer but the data is corrupt (a USB transfer error, say).
    static let error = Self(rawValue: UInt32(V4L2_BUF_FLAG_ERROR))
    /// The last buffer before the driver stops (after a source change, for example).
    static let last = Self(rawValue: UInt32(V4L2_BUF_FLAG_LAST))
    static let timestampMask = Self(rawValue: UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK))
    /// Timestamps are CLOCK_MONOTONIC, the clock camrec times everything with.
    static let timestampMonotonic = Self(rawValue: UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC))

    /// Whether the timestamp is a monotonic capture time (and not copied from elsewhere or unknown).
    var hasMonotonicTimestamp: Bool {
        rawValue & Self.timestampMask.rawValue == Self.timestampMonotonic.rawValue
    }

    /// Whether the driver does not say which clock stamped the buffer (type UNKNOWN: v4l2loopback).
    var hasUnknownTimestampType: Bool {
        rawValue & Self.timestampMask.rawValue == UInt32(V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN)
    }
}
