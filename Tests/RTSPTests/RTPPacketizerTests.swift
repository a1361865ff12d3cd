import Bitstream
import XCTest

@testable import RTSP

/// FU-A (RFC 6184) and FU (RFC 7798): packets within the MTU, and a receiver's reassembly gives back every NAL unit.
final class RTPPacketizerTests: XCTestCase {
    /// An access unit of these NAL units (headers included) with 4-byte start codes.
    private func accessUnit(_ units: [[UInt8]]) -> [UInt8] { units.flatMap { [0, 0, 0, 1] + $0 } }

    private func unit(header: [UInt8], size: Int, seed: Int) -> [UInt8] {
        // No 00 00 0x runs inside (they would be start codes): bytes 1...255.
        header + (0..<(size - header.count)).map { UInt8(1 + ($0 * 31 + seed) % 255) }
    }

    /// RTP payloads (prefix + range) as bytes.
    private func payloads(_ au: [UInt8], codec: VideoCodec, mtu: Int) -> (payloads: [[UInt8]], markers: [Bool]) {
        var fragments: [RTPFragment] = []
        au.withUnsafeBytes { RTPPacketizer(codec: codec, maximumPacketBytes: mtu).fragments(of: $0, into: &fragments) }
        return (fragments.map { $0.prefix + Array(au[$0.payload]) }, fragments.map(\.marker))
    }

    /// A receiver's depacketizer, written from the RFCs: single NAL units pass, FU fragments join between S and E.
    private func reassemble(_ payloads: [[UInt8]], codec: VideoCodec) throws -> [[UInt8]] {
        var units: [[UInt8]] = []
        var pending: [UInt8]?
        for p in payloads {
            let type = codec == .h264 ? p[0] & 0x1F : (p[0] >> 1) & 0x3F
            if (codec == .h264 && type == 28) || (codec == .hevc && type == 49) {
                let fuHeader = codec == .h264 ? p[1] : p[2]
                let start = fuHeader & 0x80 != 0, end = fuHeader & 0x40 != 0
                let data = p[(codec == .h264 ? 2 : 3)...]
                if start {
                    XCTAssertNil(pending, "a start inside a fragmented unit")
                    pending = codec == .h264 ? [(p[0] & 0xE0) | (fuHeader & 0x1F)]
                        : [(p[0] & 0x81) | ((fuHeader & 0x3F) << 1), p[1]]
                }
                guard pending != nil else { throw XCTSkip("a fragment without its start") }
                pending! += data
                if end {
                    units.append(pending!)
                    pending = nil
                }
            } else {
                XCTAssertNil(pending, "a single unit inside a fragmented one")
                units.append(p)
            }
        }
        XCTAssertNil(pending)
        return units
    }

    func testH264FUARoundTripWithinTheMTU() throws {
        let units = [unit(header: [0x67], size: 25, seed: 1), unit(header: [0x68], size: 4, seed: 2),
                     unit(header: [0x65], size: 20_000, seed: 3), unit(header: [0x65], size: 1388, seed: 4),
                     unit(header: [0x65], size: 1389, seed: 5)]
        for mtu in [1400, 576, 256, 9000] {
            let (payloads, markers) = payloads(accessUnit(units), codec: .h264, mtu: mtu)
            XCTAssertTrue(payloads.allSatisfy { $0.count + 12 <= mtu }, "MTU \(mtu)")
            XCTAssertEqual(try reassemble(payloads, codec: .h264), units, "MTU \(mtu)")
            XCTAssertEqual(markers.filter { $0 }.count, 1)
            XCTAssertEqual(markers.last, true)
        }
        // A unit of exactly MTU - 12 bytes is one packet; one byte more is two fragments.
        XCTAssertEqual(payloads(accessUnit([units[3]]), codec: .h264, mtu: 1400).payloads.count, 1)
        let split = payloads(accessUnit([units[4]]), codec: .h264, mtu: 1400).payloads
        XCTAssertEqual(split.count, 2)
        XCTAssertEqual(split[0][0], 0x60 | 28, "FU indicator keeps F and NRI")
        XCTAssertEqual(split[0][1], 0x85, "S bit and the type")
        XCTAssertEqual(split[1][1], 0x45, "E bit and the type")
    }

    func testH265FURoundTripWithinTheMTU() throws {
        let units = [unit(header: [0x40, 0x01], size: 24, seed: 1), unit(header: [0x42, 0x01], size: 40, seed: 2),
                     unit(header: [0x44, 0x01], size: 8, seed: 3), unit(header: [0x26, 0x01], size: 30_001, seed: 4),
                     unit(header: [0x02, 0x01], size: 5000, seed: 5)]
        for mtu in [1400, 500, 1500] {
            let (payloads, markers) = payloads(accessUnit(units), codec: .hevc, mtu: mtu)
            XCTAssertTrue(payloads.allSatisfy { $0.count + 12 <= mtu }, "MTU \(mtu)")
            XCTAssertEqual(try reassemble(payloads, codec: .hevc), units, "MTU \(mtu)")
            XCTAssertEqual(markers, Array(repeating: false, count: markers.count - 1) + [true])
        }
        let first = payloads(accessUnit([units[3]]), codec: .hevc, mtu: 1400).payloads[0]
        XCTAssertEqual(Array(first.prefix(3)), [49 << 1, 0x01, 0x80 | 19], "FU payload header (type 49, TID kept), S and IDR_W_RADL")
    }

    func testRTPHeaderAndSenderReportLayout() {
        XCTAssertEqual(RTPPacketizer.header(marker: true, payloadType: 96, sequence: 0x1234, timestamp: 0xA1B2C3D4, ssrc: 0x01020304),
                       [0x80, 0xE0, 0x12, 0x34, 0xA1, 0xB2, 0xC3, 0xD4, 1, 2, 3, 4])
        let sr = RTCP.senderReport(ssrc: 7, ntp: 0x0102030405060708, rtpTimestamp: 9, packets: 10, octets: 11)
        XCTAssertEqual(sr.count, 28)
        XCTAssertEqual(Array(sr.prefix(4)), [0x80, 200, 0, 6])
        XCTAssertEqual(Array(sr[8..<16]), [1, 2, 3, 4, 5, 6, 7, 8])
        // 1970-01-01 is 2208988800 s after NTP's epoch; half a second is half the fraction.
        XCTAssertEqual(RTCP.ntp(unixNanoseconds: 500_000_000), 2_208_988_800 << 32 | 0x8000_0000)
    }

    func testReceiverReportsAreReadWithinBoundsAndJunkIsNotRTCP() {
        // RR with one block (ssrc 0x0A0B0C0D, 25% lost, 3 lost, jitter 90) then an SDES.
        let rr: [UInt8] = [0x81, 201, 0, 7, 0, 0, 0, 1, 0x0A, 0x0B, 0x0C, 0x0D, 64, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 90, 0, 0, 0, 0, 0, 0, 0, 0]
        let sdes: [UInt8] = [0x81, 202, 0, 1, 0, 0, 0, 1]
        XCTAssertEqual(RTCP.receptionReports(in: rr + sdes),
                       [RTCP.ReceptionReport(ssrc: 0x0A0B0C0D, fractionLost: 64, cumulativeLost: 3, jitter: 90)])
        XCTAssertNil(RTCP.receptionReports(in: Array(rr.prefix(20))), "a length past the end")
        XCTAssertNil(RTCP.receptionReports(in: [0x00, 201, 0, 0]), "version 0")
        XCTAssertNil(RTCP.receptionReports(in: []))
        // A block count the packet's length does not hold reads no block past it.
        XCTAssertEqual(RTCP.receptionReports(in: [0x9F, 201, 0, 1, 0, 0, 0, 1]), [])
        // Many packets: no more than the bound are read.
        let many = Array([[UInt8]](repeating: sdes, count: 10_000).joined())
        XCTAssertEqual(RTCP.receptionReports(in: many, maximumPackets: 32), [])
    }
}
