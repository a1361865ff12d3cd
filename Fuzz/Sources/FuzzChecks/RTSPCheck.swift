import RTSP

/// One fuzz input as the bytes of an RTSP connection: parsed all at once, one byte at a time and in
/// pieces cut where the input says, the messages and the error (if any) must be the same, and what
/// the parser holds never passes its bounds. The same bytes go to the RTCP reader, the Transport
/// header's chooser and the URI's path: none may trap.
public func checkRTSP(_ bytes: [UInt8]) {
    let whole = parseRTSP([bytes[...]])
    let single = parseRTSP(bytes.indices.map { bytes[$0...$0] })
    var pieces: [ArraySlice<UInt8>] = []
    var from = 0
    while from < bytes.count {
        let size = 1 + Int(bytes[from]) % 61
        pieces.append(bytes[from..<min(bytes.count, from + size)])
        from += size
    }
    let cut = parseRTSP(pieces)
    precondition(whole.messages == single.messages && whole.messages == cut.messages, "the messages depend on how the bytes were cut")
    precondition(whole.error == single.error && whole.error == cut.error, "the error depends on how the bytes were cut")
    _ = RTCP.receptionReports(in: bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    _ = RTSPTransport.choose(from: text)
    _ = rtspPath(of: text)
}

private func parseRTSP(_ pieces: [ArraySlice<UInt8>]) -> (messages: [RTSPInbound], error: RTSPParseError?) {
    var parser = RTSPMessageParser()
    let limits = RTSPMessageParser.Limits.standard
    // A head (and its blank line), a body, or one interleaved frame, and the piece that came with it.
    let most = limits.maximumHeadBytes + 4 + limits.maximumBodyBytes + 65_539 + 64
    var messages: [RTSPInbound] = []
    for piece in pieces {
        do {
            try parser.feed(piece) { messages.append($0) }
        } catch {
            return (messages, error as? RTSPParseError)
        }
        precondition(parser.heldBytes <= most, "the parser holds \(parser.heldBytes) bytes")
    }
    return (messages, nil)
}
