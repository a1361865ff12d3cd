import ExtrasBase64
import Glibc

/// Who may watch: the one user and password of `--http-auth-file`, by Digest (RFC 2617, as RTSP clients
/// do it: `MD5(MD5(user:realm:password):nonce:MD5(method:uri))`, with or without `qop=auth`) or Basic.
/// Every request but OPTIONS needs it, from loopback too; a wrong one gets 401 and the same challenge
/// as none at all.
public struct RTSPAuthentication: Sendable {
    public let user: String
    private let password: String
    public let realm: String

    public init(user: String, password: String, realm: String = "camrec") {
        self.user = user
        self.password = password
        self.realm = realm
    }

    /// The WWW-Authenticate values of a 401: Digest first (clients pick the strongest they know).
    public func challenges(nonce: String) -> [String] {
        ["Digest realm=\"\(realm)\", nonce=\"\(nonce)\", algorithm=MD5", "Basic realm=\"\(realm)\""]
    }

    /// Whether `authorization` (the header's value) proves the password for `method` under `nonce`
    /// (the one this connection was given).
    public func allows(authorization: String?, method: String, nonce: String) -> Bool {
        guard let authorization else { return false }
        let trimmed = authorization.trimmingSpaces
        if trimmed.lowercased().hasPrefix("basic ") {
            let expected = Array((user + ":" + password).utf8)
            guard let given = try? Base64.decode(string: String(trimmed.dropFirst(6)).trimmingSpaces) else { return false }
            return constantTimeEqual(given, expected)
        }
        guard trimmed.lowercased().hasPrefix("digest ") else { return false }
        let fields = Self.parameters(String(trimmed.dropFirst(7)))
        guard let name = fields["username"], let uri = fields["uri"], let response = fields["response"],
              fields["nonce"] == nonce, fields["realm"] == realm,
              fields["algorithm"].map({ $0.uppercased() == "MD5" }) ?? true else { return false }
        let ha1 = MD5.hex(Array("\(user):\(realm):\(password)".utf8))
        let ha2 = MD5.hex(Array("\(method):\(uri)".utf8))
        let expected: String
        if let qop = fields["qop"] {
            guard qop == "auth", let nc = fields["nc"], let cnonce = fields["cnonce"] else { return false }
            expected = MD5.hex(Array("\(ha1):\(nonce):\(nc):\(cnonce):\(qop):\(ha2)".utf8))
        } else {
            expected = MD5.hex(Array("\(ha1):\(nonce):\(ha2)".utf8))
        }
        // The user name is compared as strictly as the response, so a wrong one says nothing more.
        let responseMatches = constantTimeEqual(Array(response.lowercased().utf8), Array(expected.utf8))
        let nameMatches = constantTimeEqual(Array(name.utf8), Array(user.utf8))
        return responseMatches && nameMatches
    }

    /// `a="b", c=d` → [a: b, c: d] (names in lower case); at most 32 of them.
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while !rest.isEmpty && result.count < 32 {
            rest = rest.drop { $0 == " " || $0 == "," || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingSpaces.lowercased()
            rest = rest[rest.index(after: equals)...]
            var value: Substring
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let close = rest.firstIndex(of: "\"") ?? rest.endIndex
                value = rest[..<close]
                rest = close < rest.endIndex ? rest[rest.index(after: close)...] : ""
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<comma]
                rest = rest[comma...]
            }
            result[name] = value.trimmingSpaces
        }
        return result
    }

    /// Compares in time that depends only on the lengths.
    private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = a.count ^ b.count
        for index in b.indices { difference |= Int(b[index] ^ (index < a.count ? a[index] : 0)) }
        return difference == 0
    }
}

/// MD5 (RFC 1321), only for Digest authentication.
public enum MD5 {
    private static let shifts: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                           5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                                           4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                           6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
    private static let table: [UInt32] = (0..<64).map { i in
        UInt32(truncatingIfNeeded: Int64(fabs(sin(Double(i + 1))) * 4294967296.0))
    }

    public static func digest(_ message: [UInt8]) -> [UInt8] {
        var a0: UInt32 = 0x67452301, b0: UInt32 = 0xefcdab89, c0: UInt32 = 0x98badcfe, d0: UInt32 = 0x10325476
        var data = message
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        let bits = UInt64(message.count) &* 8
        for i in 0..<8 { data.append(UInt8((bits >> (8 * UInt64(i))) & 0xFF)) }
        for block in stride(from: 0, to: data.count, by: 64) {
            var m = [UInt32](repeating: 0, count: 16)
            for i in 0..<16 {
                let b = block + i * 4
                m[i] = UInt32(data[b]) | UInt32(data[b + 1]) << 8 | UInt32(data[b + 2]) << 16 | UInt32(data[b + 3]) << 24
            }
            var a = a0, b = b0, c = c0, d = d0
            for i in 0..<64 {
                var f: UInt32
                let g: Int
                switch i {
                case 0..<16: f = (b & c) | (~b & d); g = i
                case 16..<32: f = (d & b) | (~d & c); g = (5 * i + 1) % 16
                case 32..<48: f = b ^ c ^ d; g = (3 * i + 5) % 16
                default: f = c ^ (b | ~d); g = (7 * i) % 16
                }
                f = f &+ a &+ table[i] &+ m[g]
                a = d
                d = c
                c = b
                b = b &+ (f << shifts[i] | f >> (32 - shifts[i]))
            }
            a0 = a0 &+ a; b0 = b0 &+ b; c0 = c0 &+ c; d0 = d0 &+ d
        }
        var out: [UInt8] = []
        for v in [a0, b0, c0, d0] { for i in 0..<4 { out.append(UInt8((v >> (8 * UInt32(i))) & 0xFF)) } }
        return out
    }

    public static func hex(_ message: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(digest(message).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }
}
