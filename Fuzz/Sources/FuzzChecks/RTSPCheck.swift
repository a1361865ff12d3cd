import RTSP

/// One fuzz input as the bytes of an RTSP connection: parsed all at once, one byte at a time and in
/// pieces cut where the input says, the messages and the error (if any) must be the same, and what
/// the parser holds never passes its bounds. Every interleaved frame, and the whole input, goes to the
/// RTCP reader as a session reads it (SessionLife: each one a report or ignored, the report blocks
/// within the packets' bound); the same bytes go to the Transport header's chooser and the URI's path:
/// none may trap.
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
    var life = SessionLife(timeoutSeconds: 60, now: 0)
    var fed = 0
    for case .interleaved(_, let payload) in whole.messages + [.interleaved(channel: 1, payload: bytes)] {
        let wasRTCP = life.rtcp(payload, ssrc: 1, at: UInt64(fed))
        fed += 1
        precondition(life.receiverReports + life.ignored == fed, "an RTCP frame neither read nor ignored")
        precondition(wasRTCP == (payload.count <= SessionLife.maximumRTCPBytes && RTCP.receptionReports(in: payload) != nil))
        // 32 packets of at most 31 blocks each.
        precondition((RTCP.receptionReports(in: payload)?.count ?? 0) <= 32 * 31, "more report blocks than 32 packets hold")
    }
    let text = String(decoding: bytes, as: UTF8.self)
    _ = RTSPTransport.choose(from: text)
    _ = RTSPTransport.choose(from: text, multicast: true)
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
