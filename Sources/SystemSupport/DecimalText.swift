/// Numbers as decimal text, without Foundation's `String(format:)` (camrec links no Foundation).
extension Double {
    /// This number with `places` decimals, rounded to the nearest (halves away from zero): "1.50",
    /// "-0.25", "3" with no places; with `trimmingZeros`, the fraction's trailing zeros (and a point
    /// left alone) dropped: "30", "29.97". Not finite: "nan", "inf", "-inf".
    public func decimalText(places: Int, trimmingZeros: Bool = false) -> String {
        guard isFinite else { return String(self) }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let units = Int64((abs(self) * scale).rounded())
        return (self < 0 && units != 0 ? "-" : "") + units.decimalText(places: places, trimmingZeros: trimmingZeros)
    }
}

extension BinaryInteger {
    /// This count of 10^-`places` units as a decimal: 1234 with 3 places is "1.234", 5 is "0.005";
    /// `trimmingZeros` as in `Double.decimalText(places:trimmingZeros:)`. Exact, for counts that a
    /// `Double` would round (microseconds since a start, as text in milliseconds).
    public func decimalText(places: Int, trimmingZeros: Bool = false) -> String {
        let digits = String(self.magnitude)
        let sign = self < 0 ? "-" : ""
        guard places > 0 else { return sign + digits }
        let padded = digits.leftPadded(to: places + 1)
        var fraction = padded.suffix(places)
        if trimmingZeros { while fraction.hasSuffix("0") { fraction.removeLast() } }
        let whole = padded.dropLast(places)
        return sign + (fraction.isEmpty ? String(whole) : "\(whole).\(fraction)")
    }
}
