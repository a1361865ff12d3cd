import Hummingbird

/// The query of `POST /api/events`, as HTML forms and `curl --data-urlencode` write it (`+` is a space,
/// `%XX` a byte), read by Hummingbird's form decoder from the raw query, where `+` and `%2B` still differ.
struct EventQuery: Decodable {
    var label: String?

    /// Throws on a broken `%` escape, bytes that are not UTF-8 once decoded, or a key given twice.
    init(query: String) throws {
        self = try URLEncodedFormDecoder().decode(EventQuery.self, from: query)
    }
}
