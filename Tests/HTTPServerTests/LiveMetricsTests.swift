import Outputs
import Synchronization
import XCTest

@testable import HTTPServer

final class LiveMetricsTests: XCTestCase {
    private func value(_ text: String, _ series: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.map { String($0.dropFirst(series.count + 1)) }
    }

    func testCountersNeverGoDownAndEverySeriesShowsFromZero() {
        let encoded = Mutex(10)
        let metrics = LiveMetrics {
            var s = LiveMetrics.Snapshot()
            s.framesEncoded = encoded.withLock { $0 }
            var counters = OutputCounters()
            counters.peers = 2
            s.outputs = [(label: "out \"1\".mp4", kind: "file", counters: counters)]
            return s
        }
        func render() -> String { String(decoding: metrics.render(), as: UTF8.self) }
        XCTAssertEqual(value(render(), "camrec_frames_encoded_total"), "10")
        encoded.withLock { $0 = 5 }
        XCTAssertEqual(value(render(), "camrec_frames_encoded_total"), "10", "a counter never goes down")
        encoded.withLock { $0 = 12 }
        let text = render()
        XCTAssertEqual(value(text, "camrec_frames_encoded_total"), "12")
        XCTAssertEqual(value(text, "camrec_frames_dropped_total"), "0")
        XCTAssertEqual(value(text, #"camrec_output_receivers{output="out \"1\".mp4",kind="file"}"#), "2.0")
    }

    func testEachRTSPClientsReceptionShowsWhileItPlaysAndGoesWhenItLeaves() {
        let clients = Mutex<[ReceiverReception]>([])
        let metrics = LiveMetrics {
            var s = LiveMetrics.Snapshot()
            var counters = OutputCounters()
            counters.receptions = clients.withLock { $0 }
            s.outputs = [(label: "--rtsp 127.0.0.1:8554/h264", kind: "rtsp", counters: counters)]
            return s
        }
        func render() -> String { String(decoding: metrics.render(), as: UTF8.self) }
        var first = ReceiverReception(receiver: "127.0.0.1:40000", session: "A1")
        first.reports = 3
        first.ignored = 1
        first.cumulativeLost = 1234
        first.fractionLost = 0.25
        first.jitterSeconds = 0.05
        // Before its first report block: its counters, and no loss or jitter made up.
        let quiet = ReceiverReception(receiver: "127.0.0.1:40002", session: "B2")
        clients.withLock { $0 = [first, quiet] }
        let labels = #"{output="--rtsp 127.0.0.1:8554/h264",client="127.0.0.1:40000",session="A1"}"#
        var text = render()
        XCTAssertEqual(value(text, "camrec_rtsp_client_lost_packets" + labels), "1234.0")
        XCTAssertEqual(value(text, "camrec_rtsp_client_loss_ratio" + labels), "0.25")
        XCTAssertEqual(value(text, "camrec_rtsp_client_jitter_seconds" + labels), "0.05")
        XCTAssertEqual(value(text, "camrec_rtsp_client_receiver_reports_total" + labels), "3")
        XCTAssertEqual(value(text, "camrec_rtsp_client_rtcp_ignored_total" + labels), "1")
        XCTAssertEqual(value(text, #"camrec_rtsp_client_receiver_reports_total{output="--rtsp 127.0.0.1:8554/h264",client="127.0.0.1:40002",session="B2"}"#), "0")
        XCTAssertFalse(text.contains(#"session="B2"}"# + " 0.0"), "no loss or jitter before a report says it")
        // The first leaves: its series go; the other's stay.
        clients.withLock { $0 = [quiet] }
        text = render()
        XCTAssertFalse(text.contains(#"session="A1""#), text)
        XCTAssertTrue(text.contains(#"session="B2""#))
        // A session of the same name coming back starts from zero, not from the old count.
        first.reports = 1
        clients.withLock { $0 = [first] }
        XCTAssertEqual(value(render(), "camrec_rtsp_client_receiver_reports_total" + labels), "1")
    }

    func testHistogramsCountEachRecordedFrame() {
        let metrics = LiveMetrics { LiveMetrics.Snapshot() }
        metrics.record(encodeNanoseconds: 3_000_000, captureToOutputsNanoseconds: 40_000_000)
        metrics.record(encodeNanoseconds: nil, captureToOutputsNanoseconds: 70_000_000)
        let text = String(decoding: metrics.render(), as: UTF8.self)
        XCTAssertEqual(value(text, "camrec_encode_seconds_count"), "1")
        XCTAssertEqual(value(text, "camrec_capture_to_outputs_seconds_count"), "2")
        XCTAssertEqual(value(text, #"camrec_capture_to_outputs_seconds_bucket{le="0.05"}"#), "1")
    }
}
