/// PostgreSQL array literals for text parameters (`$1::text[]`), so that a set of values is one parameter of one
/// statement.
enum PostgresArray {
    /// `{"a","b"}`: every element quoted, `"` and `\` escaped, so any text (commas, braces, spaces, `NULL`) is kept
    /// as it is.
    static func text(_ values: [String]) -> String {
        var literal = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }
}
