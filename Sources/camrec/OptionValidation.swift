import ArgumentParser

/// Ranges for numeric options, checked at parse time so a value the code cannot hold is a usage
/// error (status 64) that names the option, never a trap later (`--duration inf` once crashed
/// converting to nanoseconds).
enum OptionRange {
    /// Longest time any option may give: about 31 years, far inside what UInt64 nanoseconds and
    /// time_t hold.
    static let maximumSeconds = 1_000_000_000.0
    /// Most frames between IDRs: nine hours at 30 fps; libavcodec's GOP length is an Int32.
    static let maximumKeyframeInterval = 1_000_000

    /// A finite number of seconds above `minimum` (or at least it, if `inclusive`) and at most
    /// `maximumSeconds`.
    static func checkSeconds(_ value: Double?, _ option: String, minimum: Double = 0, inclusive: Bool = false,
                             maximum: Double = maximumSeconds) throws {
        guard let value else { return }
        let aboveMinimum = inclusive ? value >= minimum : value > minimum
        guard value.isFinite, aboveMinimum, value <= maximum else {
            let lower = inclusive ? "at least \(format(minimum))" : "more than \(format(minimum))"
            throw ValidationError("\(option) must be a number of seconds, \(lower) and at most \(format(maximum)); got \(format(value))")
        }
    }

    /// A whole number in `range`.
    static func check(_ value: Int?, _ option: String, in range: ClosedRange<Int>) throws {
        guard let value else { return }
        guard range.contains(value) else {
            throw ValidationError("\(option) must be between \(range.lowerBound) and \(range.upperBound); got \(value)")
        }
    }

    private static func format(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

/// libx264's presets: anything else is a usage error, not an encoder failure at start.
let x264Presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]
