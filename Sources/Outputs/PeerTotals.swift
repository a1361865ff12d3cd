/// What the receivers of one TCP output were sent, summed over every connection it had.
struct PeerTotals {
    var frames = 0
    var bytes = 0
    var idrFrames = 0
    var skipped = 0
    var overflows = 0
    var latency = LatencySamples()

    /// Adds up one connection that ended.
    mutating func add(_ s: PeerSender.Summary) {
        frames += s.frames
        bytes += s.bytes
        idrFrames += s.idrFrames
        skipped += s.skippedFrames
        overflows += s.overflows
        for v in s.latency.values { latency.add(v) }
    }

    func report(kind: OutputKind, label: String) -> OutputReport {
        var report = OutputReport(kind: kind, label: label)
        report.frames = frames
        report.bytes = bytes
        report.idrFrames = idrFrames
        report.skippedFrames = skipped
        return report
    }
}

/// What a push output (one peer at a time, reconnecting: `TCPPushOutput`, `PushOutput`) has done.
struct PushTotals {
    var connections = 0
    /// Access units the hub offered to its connections, one after another.
    var offeredToPeers = 0
    var sent = PeerTotals()

    /// Adds up one connection that ended.
    mutating func add(_ s: PeerSender.Summary) {
        sent.add(s)
        offeredToPeers += s.offered
    }

    /// The counters for status and metrics, with the connection now open (if any) counted in.
    func counters(current: PeerSender.Summary?, currentAlive: Bool) -> OutputCounters {
        var sent = self.sent
        if let current { sent.add(current) }
        var counters = OutputCounters()
        counters.frames = sent.frames
        counters.bytes = sent.bytes
        counters.skippedFrames = sent.skipped
        counters.reconnects = max(0, connections - 1)
        counters.peers = currentAlive ? 1 : 0
        return counters
    }

    /// The closing line: what was sent over how many connections, and what the peer missed.
    func summary(label: String, peerKind: String, published: Int) -> String {
        let t = sent
        // Published while no connection was subscribed: before the first, between two, after the last.
        let missedWhileDisconnected = max(0, published - offeredToPeers)
        var words = ["\(label): sent \(t.frames) frames over \(connections) connection\(connections == 1 ? "" : "s")"]
        if connections == 0 { words = ["\(label): the \(peerKind) was never reachable; nothing sent"] }
        if missedWhileDisconnected > 0 { words.append("\(missedWhileDisconnected) recorded while disconnected") }
        if t.skipped > 0 { words.append("\(t.skipped) skipped in \(t.overflows) catch-ups to an IDR") }
        if let latency = t.latency.summary { words.append("capture to sent: \(latency)") }
        return words.joined(separator: "; ")
    }
}
