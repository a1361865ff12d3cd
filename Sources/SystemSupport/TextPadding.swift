extension String {
    /// The string with `pad` in front up to `width` characters (the exit-status table's spaces, the
    /// zeros of two decimals and of the recording shelf's dates); unchanged when it is as long already.
    public func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
