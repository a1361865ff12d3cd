import Outputs
import Prometheus
import Synchronization

/// `/metrics`: the recording in Prometheus text (swift-prometheus's registry).
///
/// Counters that camrec keeps anyway (frames, drops, bytes per output) are read when scraped and
/// added to the registry's counters by their growth since the last scrape, so they never go
/// down. The two histograms are fed per access unit from the encoder thread.
public final class LiveMetrics: Sendable {
    /// The recording's own counters at one moment.
    public struct Snapshot: Sendable {
        public var framesCaptured = 0
        public var framesEncoded = 0
        public var framesDropped = 0
        public var framesErrored = 0
        public var bytesEncoded = 0
        public var cameraLosses = 0
        public var cameraReturns = 0
        public var cameraPresent = true
        public var outputs: [(label: String, kind: String, counters: OutputCounters)] = []
        /// With --event-output: events and triggers by what set them off (signal, http, motion), and
        /// the events whose clip is being written.
        public var eventsEnabled = false
        public var events: [String: Int] = [:]
        public var eventTriggers: [String: Int] = [:]
        public var eventsOpen = 0
        public init() {}
    }

    private let registry = PrometheusCollectorRegistry()
    private let snapshot: @Sendable () -> Snapshot
    private let encodeTime: DurationHistogram
    private let captureToOutputs: DurationHistogram
    /// The values already added to each counter, by the counter's name and labels.
    private let added = Mutex<[String: Int]>([:])
    /// The per-receiver series of the last scrape, by their labels: a receiver's series are removed
    /// when it leaves, so a long recording's scrape holds the receivers there now, not every one since.
    private let receiverSeries = Mutex<[String: ReceiverSeries]>([:])

    private struct ReceiverSeries {
        var counters: [Counter] = []
        var gauges: [Gauge] = []
        var keys: [String] = []
    }

    public init(snapshot: @escaping @Sendable () -> Snapshot) {
        self.snapshot = snapshot
        let milliseconds: [Duration] = [1, 2, 5, 10, 20, 33, 50, 100, 200, 500, 1000, 2000].map { .milliseconds($0) }
        encodeTime = registry.makeDurationHistogram(
            descriptor: Self.name("encode", "seconds", "From handing a frame to the encoder to its access unit coming out"),
            buckets: milliseconds)
        captureToOutputs = registry.makeDurationHistogram(
            descriptor: Self.name("capture_to_outputs", "seconds", "From a frame's capture timestamp to its access unit being handed to the outputs"),
            buckets: milliseconds)
    }

    /// One access unit's timing (the recorder's encoder thread).
    public func record(encodeNanoseconds: UInt64?, captureToOutputsNanoseconds: UInt64?) {
        if let n = encodeNanoseconds, let value = Int64(exactly: n) { encodeTime.recordNanoseconds(value) }
        if let n = captureToOutputsNanoseconds, let value = Int64(exactly: n) { captureToOutputs.recordNanoseconds(value) }
    }

    /// The Prometheus text exposition of everything now.
    public func render() -> [UInt8] {
        let now = snapshot()
        added.withLock { added in
            @discardableResult
            func count(_ name: String, _ help: String, _ value: Int, labels: [(String, String)] = []) -> Counter {
                let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
                // Made even at zero, so a scraper sees every series from the start.
                let counter = registry.makeCounter(descriptor: Self.name(name, "total", help), labels: labels)
                let growth = value - added[key, default: 0]
                guard growth > 0 else { return counter }
                added[key] = value
                counter.increment(by: Int64(growth))
                return counter
            }
            count("frames_captured", "Frames the source handed to the encoder", now.framesCaptured)
            count("frames_encoded", "Access units the encoder produced and the stream writer passed on", now.framesEncoded)
            count("frames_dropped", "Frames lost before the encoder (device sequence gaps, errored buffers, empty pool)", now.framesDropped)
            count("frames_errored", "Of the dropped frames, those the device delivered corrupt", now.framesErrored)
            count("encoded_bytes", "Bytes of H.264 the stream writer passed on", now.bytesEncoded)
            count("camera_losses", "Times the camera went away (unplugged, reset, stalled) during the recording", now.cameraLosses)
            count("camera_returns", "Times the camera came back and recording went on (--on-camera-lost wait)", now.cameraReturns)
            if now.eventsEnabled {
                for trigger in ["signal", "http", "motion"] {
                    count("events", "Events started (each one clip), by what started them", now.events[trigger, default: 0],
                          labels: [("trigger", trigger)])
                    count("event_triggers", "Triggers, the ones that extended a clip included", now.eventTriggers[trigger, default: 0],
                          labels: [("trigger", trigger)])
                }
            }
            var present: [String: ReceiverSeries] = [:]
            for output in now.outputs {
                for reception in output.counters.receptions {
                    let labels = [("output", output.label), ("client", reception.receiver), ("session", reception.session)]
                    let id = labels.map { "|\($0.0)=\($0.1)" }.joined()
                    var series = ReceiverSeries()
                    series.counters.append(count("rtsp_client_receiver_reports", "RTCP compound packets an RTSP client sent (its receiver reports)",
                                                 reception.reports, labels: labels))
                    series.counters.append(count("rtsp_client_rtcp_ignored", "Datagrams or interleaved frames on an RTSP client's RTCP channel that were not RTCP (ignored)",
                                                 reception.ignored, labels: labels))
                    series.keys = ["rtsp_client_receiver_reports" + id, "rtsp_client_rtcp_ignored" + id]
                    if let lost = reception.cumulativeLost, let fraction = reception.fractionLost, let jitter = reception.jitterSeconds {
                        let gauges = [
                            (Self.name("rtsp_client_lost", "packets", "Packets an RTSP client lost since it started, as its newest receiver report says"), Double(lost)),
                            (Self.name("rtsp_client_loss", "ratio", "The fraction of packets an RTSP client lost between its last two receiver reports"), fraction),
                            (Self.name("rtsp_client_jitter", "seconds", "An RTSP client's interarrival jitter, as its newest receiver report says"), jitter),
                        ]
                        for (descriptor, value) in gauges {
                            let gauge = registry.makeGauge(descriptor: descriptor, labels: labels)
                            gauge.set(to: value)
                            series.gauges.append(gauge)
                        }
                    }
                    present[id] = series
                }
                let labels = [("output", output.label), ("kind", output.kind)]
                count("output_frames", "Access units an output wrote or sent (summed over its receivers)", output.counters.frames, labels: labels)
                count("output_bytes", "Stream bytes an output wrote or sent (summed over its receivers)", output.counters.bytes, labels: labels)
                count("output_skipped_frames", "Access units a slow receiver of an output skipped to catch up at an IDR", output.counters.skippedFrames, labels: labels)
                count("output_reconnects", "Connections an output made after its first", output.counters.reconnects, labels: labels)
            }
            receiverSeries.withLock { previous in
                for (id, gone) in previous where present[id] == nil {
                    for counter in gone.counters { registry.unregisterCounter(counter) }
                    for gauge in gone.gauges { registry.unregisterGauge(gauge) }
                    for key in gone.keys { added[key] = nil }
                }
                previous = present
            }
        }
        if now.eventsEnabled {
            registry.makeGauge(descriptor: Self.name("events", "open", "Events whose clip is being written now")).set(to: Double(now.eventsOpen))
        }
        registry.makeGauge(descriptor: Self.name("camera", "present", "1 while the camera delivers, 0 while camrec waits for it to come back"))
            .set(to: now.cameraPresent ? 1 : 0)
        for output in now.outputs {
            registry.makeGauge(descriptor: Self.name("output", "receivers", "Receivers or viewers an output has connected now"),
                               labels: [("output", output.label), ("kind", output.kind)]).set(to: Double(output.counters.peers))
        }
        return registry.emitToBuffer()
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "camrec", metricName: metric, unitName: unit, helpText: help)
    }
}
