/// A path a route answers, as written in the route table: `/api/v1/sessions/{code}/end`.
///
/// Segments are literal text (matched exactly, case-sensitive), a `{name}` parameter (one whole segment, any text:
/// the already percent-decoded segment of ``SupportHTTP/HTTPRequest/pathSegments``), or a final `**` that takes zero or
/// more segments (the fallbacks: "anything else below /api/"). `/` is the pattern of no segments.
struct RoutePattern: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
        /// Zero or more segments; last only.
        case rest
    }

    let segments: [Segment]

    /// Parses `text`; traps on a pattern the table must never hold (no leading `/`, an empty segment, an empty or
    /// repeated parameter name, `**` before the end): route tables are written by hand and checked at start-up.
    init(_ text: String) {
        precondition(text.hasPrefix("/"), "route pattern \(text): must start with /")
        var segments: [Segment] = []
        let pieces = text == "/" ? [] : text.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        for (index, piece) in pieces.enumerated() {
            precondition(!piece.isEmpty, "route pattern \(text): empty segment")
            if piece == "**" {
                precondition(index == pieces.count - 1, "route pattern \(text): ** must be the last segment")
                segments.append(.rest)
            } else if piece.hasPrefix("{") {
                precondition(piece.hasSuffix("}") && piece.count > 2, "route pattern \(text): bad parameter \(piece)")
                segments.append(.parameter(String(piece.dropFirst().dropLast())))
            } else {
                precondition(!piece.contains("{") && !piece.contains("}"), "route pattern \(text): bad segment \(piece)")
                segments.append(.literal(String(piece)))
            }
        }
        self.segments = segments
        precondition(
            Set(parameterNames).count == parameterNames.count, "route pattern \(text): a parameter name appears twice")
    }

    init(stringLiteral value: String) { self.init(value) }

    /// The parameters by name when `path` (decoded segments) matches; nil when it does not.
    func match(_ path: [String]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .rest: return parameters
            case .literal(let text):
                guard index < path.count, path[index] == text else { return nil }
            case .parameter(let name):
                guard index < path.count else { return nil }
                parameters[name] = path[index]
            }
        }
        return path.count == segments.count ? parameters : nil
    }

    /// Whether this pattern wins over `other` when both match a path: segment by segment from the left, a literal
    /// beats a parameter, which beats `**`; a pattern without `**` beats one with it when all else is equal. So
    /// `/api/v1/sessions/{code}/end` wins over `/api/v1/sessions/{code}/{action}`, which wins over `/api/**`.
    func isMoreSpecific(than other: RoutePattern) -> Bool {
        for (mine, theirs) in zip(segments, other.segments) where Self.rank(mine) != Self.rank(theirs) {
            return Self.rank(mine) > Self.rank(theirs)
        }
        return !segments.contains(.rest) && other.segments.contains(.rest)
    }

    private static func rank(_ segment: Segment) -> Int {
        switch segment {
        case .literal: 2
        case .parameter: 1
        case .rest: 0
        }
    }

    /// The names of the parameters, in order.
    var parameterNames: [String] {
        segments.compactMap { segment in
            if case .parameter(let name) = segment { return name }
            return nil
        }
    }

    /// The pattern as written.
    var description: String {
        "/"
            + segments.map { segment in
                switch segment {
                case .literal(let text): text
                case .parameter(let name): "{\(name)}"
                case .rest: "**"
                }
            }.joined(separator: "/")
    }
}
