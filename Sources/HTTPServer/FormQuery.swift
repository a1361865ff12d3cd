/// One value of a query string as HTML forms and `curl --data-urlencode` write it: `+` is a space and
/// `%XX` a byte. Read from the raw query, since a `+` and an encoded `%2B` differ only there.
enum FormQuery {
    struct Malformed: Error {}

    /// The first value of `name` in `query` (without the `?`); nil when absent. Throws when it is not
    /// valid UTF-8 once decoded, or a `%` is not followed by two hex digits.
    static func value(of name: String, in query: Substring) throws(Malformed) -> String? {
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard decode(parts[0]) == name else { continue }
            guard parts.count > 1 else { return "" }
            guard let value = decode(parts[1]) else { throw Malformed() }
            return value
        }
        return nil
    }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
