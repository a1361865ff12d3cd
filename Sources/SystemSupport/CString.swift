/// Text from C: what the C library and the kernel hand back in a buffer of `char`s.
extension String {
    /// The text of a C buffer (`getnameinfo`'s host, an `fgets` line, an error message): its bytes up
    /// to the first NUL, or all of them when there is none, as UTF-8 (bytes that are not, repaired).
    public init(cBuffer buffer: some Collection<CChar>) {
        self.init(decoding: buffer.lazy.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The text of a fixed-size C `char` array, which Swift imports as a tuple (`dirent.d_name`,
    /// `v4l2_capability.card`), as `init(cBuffer:)` reads a buffer.
    public init<Tuple>(cArray tuple: Tuple) {
        self = withUnsafeBytes(of: tuple) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
