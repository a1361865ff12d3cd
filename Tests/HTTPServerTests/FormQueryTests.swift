@testable import HTTPServer
import XCTest

/// `POST /api/events?label=`: the query as forms and curl --data-urlencode write it.
final class FormQueryTests: XCTestCase {
    func testPlusIsASpaceAndPercentEscapesAreBytes() throws {
        XCTAssertEqual(try FormQuery.value(of: "label", in: "label=front+door%20%2B%24(x)"), "front door +$(x)")
        XCTAssertEqual(try FormQuery.value(of: "label", in: "a=1&label=%C3%A9t%C3%A9&label=second"), "été", "the first one")
        XCTAssertEqual(try FormQuery.value(of: "label", in: "label"), "")
        XCTAssertNil(try FormQuery.value(of: "label", in: "xlabel=1&labelx=2&a=label"))
        XCTAssertNil(try FormQuery.value(of: "label", in: ""))
    }

    func testBrokenEscapesAndInvalidUTF8AreRefused() {
        for query in ["label=%", "label=%4", "label=%zz", "label=%C3", "label=%FF%FE"] {
            XCTAssertThrowsError(try FormQuery.value(of: "label", in: Substring(query)), query)
        }
    }
}
