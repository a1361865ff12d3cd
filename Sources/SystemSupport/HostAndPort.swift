/// `host:port` as URLs and logs write it, with an IPv6 address in brackets: `127.0.0.1:9982`,
/// `[::1]:9982`, `camera.local:554`; `:9982` when there is no host (every address).
public func hostAndPort(_ host: String?, _ port: some BinaryInteger) -> String {
    guard let host else { return ":\(port)" }
    return (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
}
