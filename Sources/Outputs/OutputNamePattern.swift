import Glibc
import SystemSupport

/// An output file name with strftime fields and placeholders, as cron and systemd users write them:
/// `/srv/cam/%Y-%m-%d/{device}-%H%M%S-{n}.h264`.
///
/// Supported: `%Y %m %d %H %M %S %j %F %T %s %%`, `{device}` (the source's stable name) and `{n}`
/// (segment counter from 1). The same pattern matches the names it produces, so retention deletes
/// this recording's files and never anything else.
public struct OutputNamePattern: Sendable, Equatable, CustomStringConvertible {
    enum Token: Sendable, Equatable {
        case literal(String)
        /// A field of exactly this many digits (%Y is 4, %m is 2…), or at least one digit when nil.
        case digits(Int?, strftime: String)
        case device
        case counter
    }

    public let template: String
    let tokens: [Token]

    public var description: String { template }

    /// Whether the name changes from file to file (a plain name is one fixed file).
    public var hasPlaceholders: Bool {
        tokens.contains { if case .literal = $0 { return false } else { return true } }
    }

    public init(_ template: String) throws {
        self.template = template
        var tokens: [Token] = []
        var literal = ""
        var chars = Array(template)[...]
        func flush() {
            if !literal.isEmpty { tokens.append(.literal(literal)); literal = "" }
        }
        while let c = chars.popFirst() {
            if c == "%" {
                guard let field = chars.popFirst() else {
                    throw OutputError(.unwritable, "output name \(template) ends with a lone %; write %% for a percent sign")
                }
                switch field {
                case "%": literal.append("%")
                case "Y": flush(); tokens.append(.digits(4, strftime: "%Y"))
                case "m", "d", "H", "M", "S": flush(); tokens.append(.digits(2, strftime: "%\(field)"))
                case "j": flush(); tokens.append(.digits(3, strftime: "%j"))
                case "s": flush(); tokens.append(.digits(nil, strftime: "%s"))
                case "F":
                    flush()
                    tokens += [.digits(4, strftime: "%Y"), .literal("-"), .digits(2, strftime: "%m"), .literal("-"),
                               .digits(2, strftime: "%d")]
                case "T":
                    flush()
                    tokens += [.digits(2, strftime: "%H"), .literal(":"), .digits(2, strftime: "%M"), .literal(":"),
                               .digits(2, strftime: "%S")]
                default:
                    throw OutputError(.unwritable, "output name \(template) uses %\(field); camrec supports %Y %m %d %H %M %S %j %F %T %s and %%")
                }
            } else if c == "{" {
                let rest = String(chars)
                if rest.hasPrefix("device}") {
                    flush(); tokens.append(.device); chars = chars.dropFirst("device}".count)
                } else if rest.hasPrefix("n}") {
                    flush(); tokens.append(.counter); chars = chars.dropFirst("n}".count)
                } else {
                    literal.append(c)
                }
            } else {
                literal.append(c)
            }
        }
        flush()
        self.tokens = tokens
    }

    /// The name for a file started at `time` (local time), the `segment`-th of this recording.
    public func render(time: time_t, segment: Int, device: String) -> String {
        var t = time
        var broken = tm()
        localtime_r(&t, &broken)
        var out = ""
        for token in tokens {
            switch token {
            case .literal(let s): out += s
            case .device: out += device
            case .counter: out += String(segment)
            case .digits(_, let format):
                var buffer = [CChar](repeating: 0, count: 32)
                let n = strftime(&buffer, buffer.count, format, &broken)
                out += String(cBuffer: buffer.prefix(n))
            }
        }
        return out
    }

    /// Whether `path` is a name this pattern produces for `device` (with or without a clash suffix `-N`).
    public func matches(_ path: String, device: String) -> Bool {
        let text = Array(path.utf8)[...]
        return Self.match(tokens[...], text, device: Array(device.utf8), allowClashSuffix: true)
    }

    private static func match(_ tokens: ArraySlice<Token>, _ text: ArraySlice<UInt8>, device: [UInt8],
                              allowClashSuffix: Bool) -> Bool {
        guard let first = tokens.first else { return text.isEmpty }
        let rest = tokens.dropFirst()
        switch first {
        case .literal(let s):
            let bytes = Array(s.utf8)
            if text.starts(with: bytes) {
                if match(rest, text.dropFirst(bytes.count), device: device, allowClashSuffix: allowClashSuffix) { return true }
            }
            // A clash suffix "-N" stands before the extension (the last literal's final dot).
            if allowClashSuffix, rest.isEmpty, let dot = bytes.lastIndex(of: UInt8(ascii: ".")) {
                let stem = bytes[..<dot], ext = bytes[dot...]
                guard text.starts(with: stem) else { return false }
                var tail = text.dropFirst(stem.count)
                guard tail.first == UInt8(ascii: "-") else { return false }
                tail = tail.dropFirst()
                let digits = tail.prefix { (48...57).contains($0) }
                return !digits.isEmpty && Array(tail.dropFirst(digits.count)) == Array(ext)
            }
            return false
        case .device:
            guard text.starts(with: device) else { return false }
            return match(rest, text.dropFirst(device.count), device: device, allowClashSuffix: allowClashSuffix)
        case .digits(let count?, _):
            let head = text.prefix(count)
            guard head.count == count, head.allSatisfy({ (48...57).contains($0) }) else { return false }
            return match(rest, text.dropFirst(count), device: device, allowClashSuffix: allowClashSuffix)
        case .digits(nil, _), .counter:
            let run = text.prefix { (48...57).contains($0) }.count
            guard run > 0 else { return false }
            for n in stride(from: run, through: 1, by: -1)
            where match(rest, text.dropFirst(n), device: device, allowClashSuffix: allowClashSuffix) {
                return true
            }
            return false
        }
    }

    /// The directory under which every name of this pattern lies (the part before any placeholder).
    public var fixedDirectory: String {
        var prefix = ""
        for token in tokens {
            guard case .literal(let s) = token else { break }
            prefix += s
        }
        if !hasPlaceholders { prefix = template }
        guard let slash = prefix.lastIndex(of: "/") else { return "." }
        let dir = String(prefix[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// A name beside `path` that doesn't clash: `name-2.ext`, `name-3.ext`, …
    public static func alternative(to path: String, attempt: Int) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return String(path[..<dot]) + "-\(attempt)" + String(path[dot...])
        }
        return path + "-\(attempt)"
    }
}
