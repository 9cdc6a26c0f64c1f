import SupportWire
import SupportUtilities
import SupportRuntime
import SupportLink
import SupportSession
import SupporterCore
import DeviceNode
import SupporterNode
import SupporterREST
import SupportPostgres

/// A plain-text table with aligned columns: text columns left-aligned, numeric columns right-aligned.
struct TablePrinter {
    enum Alignment { case left, right }

    struct Column {
        let title: String
        let alignment: Alignment
    }

    let title: String
    let columns: [Column]
    private var rows: [[String]] = []

    init(title: String, columns: [Column]) {
        self.title = title
        self.columns = columns
    }

    mutating func addRow(_ cells: [String]) {
        precondition(cells.count == columns.count, "row has \(cells.count) cells, table has \(columns.count) columns")
        rows.append(cells)
    }

    /// The table as lines of text, ready to print.
    func render() -> String {
        var widths = columns.map { $0.title.count }
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (index, cell) in cells.enumerated() {
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                if index > 0 { text += "  " }
                text += columns[index].alignment == .left ? cell + padding : padding + cell
            }
            // No trailing spaces from a left-aligned last column.
            while text.last == " " { text.removeLast() }
            return text
        }
        var output = title + "\n"
        output += line(columns.map(\.title)) + "\n"
        output += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for row in rows { output += line(row) + "\n" }
        return output
    }

    func print() { Swift.print(render(), terminator: "") }
}

/// Number formatting without Foundation.
enum Format {
    /// `value` rounded to `decimals` places, e.g. `fixed(3.14159, 2)` = "3.14".
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let negative = value < 0
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return String(value) }
        let units = UInt64(scaled)
        let whole = units / UInt64(scale)
        var text = grouped(whole)
        if decimals > 0 {
            var fraction = String(units % UInt64(scale))
            while fraction.count < decimals { fraction = "0" + fraction }
            text += "." + fraction
        }
        return negative && units != 0 ? "-" + text : text
    }

    /// An integer with thousands separators, e.g. "1,048,576".
    static func grouped(_ value: UInt64) -> String {
        let digits = Array(String(value))
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return text
    }

    static func grouped(_ value: Int) -> String {
        value < 0 ? "-" + grouped(UInt64(-value)) : grouped(UInt64(value))
    }

    /// A rate: integer with separators from 100 up, else 2 significant decimals.
    static func rate(_ value: Double) -> String {
        value >= 100 ? fixed(value, 0) : fixed(value, 2)
    }
}
