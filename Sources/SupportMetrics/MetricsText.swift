/// The text exposition format's escaping and number rules, in one place: every help text and label value reaches
/// the exposition through here.
enum MetricsText {
    /// A sample line: `name{label="value",...} number`.
    static func line(_ name: String, _ labelNames: [String], _ labels: [String], _ value: Double) -> String {
        guard !labelNames.isEmpty else { return "\(name) \(number(value))\n" }
        let pairs = zip(labelNames, labels).map { "\($0)=\"\(labelValue($1))\"" }
        return "\(name){\(pairs.joined(separator: ","))} \(number(value))\n"
    }

    /// A label value: backslash, double quote and line feed escaped, as the format asks.
    static func labelValue(_ text: String) -> String {
        var escaped = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// A help text: backslash and line feed escaped.
    static func help(_ text: String) -> String {
        text.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }

    /// A value as Go's strconv prints it for Prometheus: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// `labels` cut or padded to `count` values.
    static func fitted(_ labels: [String], _ count: Int) -> [String] {
        labels.count == count ? labels : Array((labels + Array(repeating: "", count: count)).prefix(count))
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self { if character == target { result += replacement } else { result.append(character) } }
        return result
    }
}
