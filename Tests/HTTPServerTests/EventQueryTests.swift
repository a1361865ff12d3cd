@testable import HTTPServer
import XCTest

/// `POST /api/events?label=`: the query as forms and curl --data-urlencode write it.
final class EventQueryTests: XCTestCase {
    func testPlusIsASpaceAndPercentEscapesAreBytes() throws {
        XCTAssertEqual(try EventQuery(query: "label=front+door%20%2B%24(x)").label, "front door +$(x)")
        XCTAssertEqual(try EventQuery(query: "a=1&label=%C3%A9t%C3%A9").label, "été")
        XCTAssertEqual(try EventQuery(query: "label=").label, "")
        XCTAssertNil(try EventQuery(query: "xlabel=1&labelx=2&a=label").label)
        XCTAssertNil(try EventQuery(query: "").label)
        // Bytes that are not UTF-8 become U+FFFD (the decoder's repair), so a label is always valid text.
        XCTAssertEqual(try EventQuery(query: "label=%FF%FEa%C3").label, "\u{FFFD}\u{FFFD}a\u{FFFD}")
    }

    func testBrokenEscapesAndRepeatsAreRefused() {
        for query in ["label=%", "label=%4", "label=%zz", "label=a&label=b"] {
            XCTAssertThrowsError(try EventQuery(query: query), query)
        }
    }
}
