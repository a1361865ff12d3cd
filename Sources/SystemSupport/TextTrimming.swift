extension StringProtocol {
    /// The text without the whitespace and line breaks at either end (`Character.isWhitespace`, which
    /// counts "\n" and "\r\n"): Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)`, here
    /// because camrec links no Foundation (its ICU data alone is 40 MB of libraries to load).
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
              let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
