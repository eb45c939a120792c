//! A [`Table`] in CSV: a head line of the columns' CSV names, a line per
//! row, every field quoted when it must be (RFC 4180). Figures are plain
//! numbers (no unit, no mark); a missing one is empty.

use super::{Align, Cell, Column, Format, Kind, Row, Table};

/// A CSV column kept as a header and how a row's cell is made, on one
/// line, so a column added or moved cannot put a figure under another's
/// name; [`Table::of_csv`] makes a table of them.
pub(in crate::report) type CsvColumn<T> = (&'static str, fn(&T) -> String);

/// `s` as one CSV field.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Fields as one CSV line, its line break included.
fn line(fields: &[String]) -> String {
    let mut line = (fields.iter().map(|f| field(f)))
        .collect::<Vec<_>>()
        .join(",");
    line.push('\n');
    line
}

impl Table {
    pub fn csv(&self) -> String {
        let shown = self.shown(Format::Csv);
        let heads: Vec<String> = (shown.iter())
            .map(|(_, c)| c.head(Format::Csv).unwrap_or("").to_string())
            .collect();
        let mut s = line(&heads);
        for row in &self.rows {
            let cells: Vec<String> = (shown.iter())
                .map(|(i, c)| row.cells[*i].plain(c.kind, Format::Csv))
                .collect();
            s.push_str(&line(&cells));
        }
        s
    }

    /// A table of CSV columns of text, a row per item of `rows`.
    pub fn of_csv<T>(columns: &[CsvColumn<T>], rows: &[T]) -> Table {
        let mut t = Table {
            rows: rows.iter().map(|_| Row::new(Vec::new())).collect(),
            ..Table::default()
        };
        for (head, cell) in columns {
            t.push_text_column(head, rows.iter().map(cell).collect());
        }
        t
    }

    /// A CSV column of text added after the others.
    pub fn push_text_column(&mut self, head: &str, cells: Vec<String>) {
        let column = Column::new(Kind::Text, Align::Left).csv(head);
        self.push_column(column, cells.into_iter().map(Cell::text).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    #[test]
    fn fields_are_quoted_when_they_must_be_and_figures_are_plain() {
        assert_eq!(
            sample().csv(),
            "server,throughput_rps,notes\npuma|x,14647.0,\"a, \"\"b\"\"; disturbed <1>\"\nthin,,1 failed\n"
        );
        let cols: [CsvColumn<u32>; 2] = [("n", |n| n.to_string()), ("line", |_| "a\nb".into())];
        assert_eq!(
            Table::of_csv(&cols, &[1, 2]).csv(),
            "n,line\n1,\"a\nb\"\n2,\"a\nb\"\n"
        );
    }
}
