import Foundation
import SupportUtilities

/// Any member name of a JSON object, so a request body's members can be listed and unknown ones refused.
struct JSONKey: CodingKey, Hashable {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Request bodies decoded strictly, as protocol/openapi.yaml says: the body must be one JSON object (else 400); a
/// member the schema does not have, or of the wrong type, length or range, is refused with 422 naming the member.
enum StrictJSON {
    /// `body` decoded as `T`, whose `init(from:)` throws ``RESTError`` for what the schema refuses.
    static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws(RESTError) -> T {
        guard !body.isEmpty else { throw RESTError(.badRequest, "the body must be a JSON object") }
        // JSON text is UTF-8 (RFC 8259 §8.1). Checked first: Foundation's decoder would otherwise read the bytes in
        // another encoding, or fail later on one member, and the client would hear of a member, not of the body.
        guard String(validating: body, as: UTF8.self) != nil else {
            throw RESTError(.badRequest, "the body is not valid JSON: it is not UTF-8")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let error as RESTError {
            throw error
        } catch {
            throw RESTError(.badRequest, "the body is not valid JSON")
        }
    }

    /// The body's top-level object; 400 when the JSON is something else (an array, a string, a number, null).
    static func object(_ decoder: any Decoder) throws(RESTError) -> KeyedDecodingContainer<JSONKey> {
        do {
            return try decoder.container(keyedBy: JSONKey.self)
        } catch {
            throw RESTError(.badRequest, "the body must be a JSON object")
        }
    }
}

extension KeyedDecodingContainer where Key == JSONKey {
    /// 422 for the first member (by name) that is not in `allowed`. Member names are compared exactly: `Type` and
    /// `customerName` are unknown members, not spellings of `type` and `customer_name`.
    func refuseUnknownMembers(allowed: Set<String>) throws(RESTError) {
        let unknown = allKeys.map(\.stringValue).filter { !allowed.contains($0) }.sorted()
        if let first = unknown.first { throw RESTError.unprocessable("unknown member '\(first)'") }
    }

    func has(_ name: String) -> Bool { contains(JSONKey(name)) }

    /// Whether the member is present and `null`.
    func isNull(_ name: String) -> Bool { (try? decodeNil(forKey: JSONKey(name))) ?? false }

    /// A media descriptor member (SPEC §15): absent (`.keep`), `null` (`.clear`, where allowed), or 1 to 4,096
    /// bytes in standard Base64.
    func mediaDescriptor(_ name: String, nullable: Bool) throws(RESTError) -> FieldChange<[UInt8]> {
        guard has(name) else { return .keep }
        if isNull(name) {
            guard nullable else { throw RESTError.unprocessable("\(name) cannot be null") }
            return .clear
        }
        guard let text = try string(name, max: 5_464, required: false), let bytes = Base64.decode(text),
            (1...4_096).contains(bytes.count)
        else { throw RESTError.unprocessable("\(name) must be 1 to 4096 bytes in standard Base64") }
        return .set(bytes)
    }

    /// A text member: absent (`.keep`), `null` (`.clear`, where the schema allows it), or a string of `min` to `max`
    /// Unicode code points (JSON Schema's minLength/maxLength count code points, not grapheme clusters).
    func text(_ name: String, min: Int = 1, max: Int, nullable: Bool) throws(RESTError) -> FieldChange<String> {
        guard has(name) else { return .keep }
        if isNull(name) {
            guard nullable else { throw RESTError.unprocessable("\(name) cannot be null") }
            return .clear
        }
        let value: String
        do { value = try decode(String.self, forKey: JSONKey(name)) } catch {
            throw RESTError.unprocessable("\(name) must be a string")
        }
        guard (min...max).contains(value.unicodeScalars.count) else {
            throw RESTError.unprocessable("\(name) must have \(min) to \(max) characters")
        }
        return .set(value)
    }

    /// A whole-number member (a JSON number without a fraction; not a string, not a boolean) within `range`.
    func integer(_ name: String, in range: ClosedRange<Int>) throws(RESTError) -> Int? {
        guard has(name) else { return nil }
        let refusal = RESTError.unprocessable("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        guard !isNull(name), let value = try? decode(Int.self, forKey: JSONKey(name)) else { throw refusal }
        guard range.contains(value) else { throw refusal }
        return value
    }

    /// A member whose value is one of `cases`' raw values.
    func choice<Value: RawRepresentable & CaseIterable>(_ name: String, _ type: Value.Type) throws(RESTError) -> Value?
    where Value.RawValue == String {
        guard has(name) else { return nil }
        let names = Value.allCases.map(\.rawValue)
        let listed = names.count == 2 ? names.joined(separator: " or ") : names.joined(separator: ", ")
        guard !isNull(name), let text = try? decode(String.self, forKey: JSONKey(name)), let value = Value(rawValue: text)
        else { throw RESTError.unprocessable("\(name) must be \(listed)") }
        return value
    }

    /// An RFC 3339 time member (not null).
    /// A list of strings, each one of `choices`, at most `choices.count` of them, no repeats; nil when absent.
    func names(_ name: String, from choices: Set<String>) throws(RESTError) -> [String]? {
        guard has(name) else { return nil }
        let values: [String]
        do { values = try decode([String].self, forKey: JSONKey(name)) } catch {
            throw RESTError.unprocessable("\(name) must be a list of strings")
        }
        for value in values where !choices.contains(value) {
            throw RESTError.unprocessable("\(name): unknown value '\(value)' (one of \(choices.sorted().joined(separator: ", ")))")
        }
        guard Set(values).count == values.count else { throw RESTError.unprocessable("\(name) lists a value twice") }
        return values
    }

    /// A string member, required (`required`) or optional; its length in code points within `min...max`.
    func string(_ name: String, min: Int = 1, max: Int, required: Bool) throws(RESTError) -> String? {
        guard has(name) else {
            if required { throw RESTError.unprocessable("\(name) is required") }
            return nil
        }
        guard case .set(let value) = try text(name, min: min, max: max, nullable: false) else {
            throw RESTError.unprocessable("\(name) must be a string")
        }
        return value
    }

    /// A boolean member (not null); nil when absent.
    func bool(_ name: String) throws(RESTError) -> Bool? {
        guard has(name) else { return nil }
        guard !isNull(name), let value = try? decode(Bool.self, forKey: JSONKey(name)) else {
            throw RESTError.unprocessable("\(name) must be true or false")
        }
        return value
    }

    /// A list of 1 to `max` strings (each 1 to 64 code points), no repeats; nil when absent.
    func strings(_ name: String, max: Int) throws(RESTError) -> [String]? {
        guard has(name) else { return nil }
        guard !isNull(name), let values = try? decode([String].self, forKey: JSONKey(name)) else {
            throw RESTError.unprocessable("\(name) must be a list of strings")
        }
        guard (1...max).contains(values.count) else {
            throw RESTError.unprocessable("\(name) must list 1 to \(max) values")
        }
        guard values.allSatisfy({ (1...64).contains($0.unicodeScalars.count) }) else {
            throw RESTError.unprocessable("each value of \(name) has 1 to 64 characters")
        }
        guard Set(values).count == values.count else { throw RESTError.unprocessable("\(name) lists a value twice") }
        return values
    }

    func time(_ name: String) throws(RESTError) -> Date? {
        guard has(name) else { return nil }
        guard !isNull(name), let text = try? decode(String.self, forKey: JSONKey(name)), let date = RESTTime.parse(text)
        else { throw RESTError.unprocessable("\(name) must be an RFC 3339 time") }
        return date
    }
}

/// An email address as the API accepts it: `local@domain` with a dot inside the domain, no whitespace.
func isEmailAddress(_ text: String) -> Bool {
    let parts = text.split(separator: "@", omittingEmptySubsequences: false)
    guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
        !parts[1].hasSuffix("."), !text.contains(where: \.isWhitespace)
    else { return false }
    return true
}
