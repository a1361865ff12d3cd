import NetStream
import XCTest

final class TCPEndpointTests: XCTestCase {
    func testURLs() throws {
        XCTAssertEqual(try TCPEndpoint(url: "tcp://127.0.0.1:9982"), TCPEndpoint(host: "127.0.0.1", port: 9982, listen: false))
        XCTAssertEqual(try TCPEndpoint(url: "tcp://camera.local:9982/"), TCPEndpoint(host: "camera.local", port: 9982, listen: false))
        XCTAssertEqual(try TCPEndpoint(url: "tcp://[::1]:9982?listen"), TCPEndpoint(host: "::1", port: 9982, listen: true))
        XCTAssertEqual(try TCPEndpoint(url: "tcp://:9982?listen"), TCPEndpoint(host: nil, port: 9982, listen: true))
        XCTAssertEqual(try TCPEndpoint(url: "TCP://[fe80::1%eth0]:1?listen").host, "fe80::1%eth0")
        XCTAssertEqual(try TCPEndpoint(url: "tcp://[::1]:9982?listen").description, "tcp://[::1]:9982?listen")
    }

    func testListenSpecs() throws {
        XCTAssertEqual(try TCPEndpoint(listenSpec: "9982"), TCPEndpoint(host: nil, port: 9982, listen: true))
        XCTAssertEqual(try TCPEndpoint(listenSpec: "127.0.0.1:9982"), TCPEndpoint(host: "127.0.0.1", port: 9982, listen: true))
        XCTAssertEqual(try TCPEndpoint(listenSpec: "[::]:9982"), TCPEndpoint(host: "::", port: 9982, listen: true))
        XCTAssertEqual(try TCPEndpoint(listenSpec: "tcp://0.0.0.0:9982"), TCPEndpoint(host: "0.0.0.0", port: 9982, listen: true))
    }

    func testMistakesSayWhatIsWrong() {
        func message(_ body: () throws -> TCPEndpoint) -> String {
            do { _ = try body(); return "" } catch { return "\(error)" }
        }
        XCTAssertTrue(message { try TCPEndpoint(url: "tcp://127.0.0.1") }.contains("give a port"))
        XCTAssertTrue(message { try TCPEndpoint(url: "tcp://::1:80") }.contains("brackets"))
        XCTAssertTrue(message { try TCPEndpoint(url: "tcp://host:99999") }.contains("1 to 65535"))
        XCTAssertTrue(message { try TCPEndpoint(url: "tcp://:9982") }.contains("receiver's host"))
        XCTAssertTrue(message { try TCPEndpoint(url: "tcp://h:1?bogus") }.contains("?listen"))
        XCTAssertTrue(message { try TCPEndpoint(url: "tcp://h:0") }.contains("port 0"))
        XCTAssertTrue(message { try TCPEndpoint(listenSpec: "[::1") }.contains("missing ]"))
        XCTAssertTrue(message { try TCPEndpoint(listenSpec: "abc") }.contains("give a port"))
    }
}
