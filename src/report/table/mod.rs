//! The reports' table model: a [`Table`] of [`Column`]s and rows of
//! [`Cell`]s, and one renderer per format (terminal.rs, markdown.rs,
//! csv.rs, html.rs), so a column is declared once and each format shows
//! it its own way.
//!
//! A column has a kind (text, count, rate, latency, bytes, MiB, percent,
//! a fixed number of decimals): the kind, not the section, decides how a figure is
//! written in each format (a latency is "1.25ms" on the terminal and in
//! HTML, "1.25" under a "(ms)" head in Markdown, "1250.0" µs in CSV), and
//! what a missing figure looks like ("-", "–" in HTML, empty in CSV). A
//! column appears in the formats it has a head for.
//!
//! A row without data (no good run) shows "no data" over its figure
//! columns: one spanned cell in HTML, in the first figure column on the
//! terminal, dashes and a note saying so in Markdown.
//!
//! condition.rs is the older condition table the conditions' sections
//! still build.

pub(super) mod condition;
mod csv;
mod html;
mod markdown;
mod terminal;

pub(super) use csv::CsvColumn;
pub(super) use markdown::md_cell;
pub(super) use terminal::{push_row, wrap, MIN_NOTES_WIDTH};

use crate::stats::spread::Spread;
use crate::units::{fmt_bytes, fmt_mib, fmt_ms, fmt_us};

/// The formats a table is rendered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Terminal,
    Markdown,
    Csv,
    Html,
}

/// What a column holds: how its figures are written in each format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Words, written as they are.
    Text,
    /// Whole things: requests, errors, runs ("12").
    Count,
    /// Requests per second ("14647"; a spread as "14647 (6967-22327)").
    Rate,
    /// Microseconds, as "1.25ms" (terminal, HTML), "1.25" (Markdown, the
    /// head says ms) or µs with one decimal (CSV).
    Latency,
    /// Bytes, as "12.5 MiB" (terminal, HTML), "12.5" (Markdown, the head
    /// says MiB) or bytes with one decimal (CSV).
    Bytes,
    /// Bytes in MiB with one decimal in every format but CSV (bytes,
    /// one decimal); the head says MiB.
    Mib,
    /// A share of 1 as a percentage with one decimal ("12.5%"); the
    /// share itself in CSV.
    Percent,
    /// A plain number with this many decimals in every format.
    Fixed(usize),
}

impl Kind {
    /// Whether the column holds a figure (every kind but text): the
    /// columns "no data" stands over.
    pub fn is_figure(self) -> bool {
        self != Kind::Text
    }

    /// A figure of this kind in `format`.
    pub fn figure(self, format: Format, v: f64) -> String {
        match (self, format) {
            (Kind::Text | Kind::Count, _) => format!("{v:.0}"),
            (Kind::Rate, Format::Csv) => format!("{v:.1}"),
            (Kind::Rate, _) => format!("{v:.0}"),
            (Kind::Latency, Format::Markdown) => fmt_ms(v),
            (Kind::Bytes, Format::Markdown) => fmt_mib(v),
            (Kind::Latency | Kind::Bytes | Kind::Mib, Format::Csv) => format!("{v:.1}"),
            (Kind::Mib, _) => fmt_mib(v),
            (Kind::Percent, Format::Csv) => format!("{v:.4}"),
            (Kind::Percent, _) => format!("{:.1}%", v * 100.0),
            (Kind::Latency, _) => fmt_us(v),
            (Kind::Bytes, _) => fmt_bytes(v as u64),
            (Kind::Fixed(d), _) => format!("{v:.d$}"),
        }
    }
}

/// How a column's cells align (Markdown's `:--`/`--:`, HTML's class "l"
/// for left, the terminal's padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Align {
    Left,
    Right,
}

/// A column's width on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Width {
    /// Each cell padded to at least this many characters (a longer one
    /// pushes the rest of its row along).
    Min(usize),
    /// As wide as its widest cell or head.
    Fit,
}

/// One column: its head in each format it appears in, its kind,
/// alignment, terminal width, and an optional note on what it means
/// (the HTML head's title).
#[derive(Debug, Clone)]
pub(super) struct Column {
    /// By [`Format`]'s order; None: not shown in that format.
    heads: [Option<String>; 4],
    pub kind: Kind,
    pub align: Align,
    pub width: Width,
    pub note: Option<String>,
    /// An HTML class every cell of the column carries besides "l".
    pub class: Option<&'static str>,
    /// The terminal writes it after the row, two spaces on and wrapped
    /// to the terminal, in brackets (a notes column; it must be last).
    pub wraps: bool,
}

impl Column {
    /// A column shown nowhere yet: give it heads with `term`, `md`,
    /// `html`, `page` (Markdown and HTML) or `csv`.
    pub fn new(kind: Kind, align: Align) -> Column {
        Column {
            heads: [None, None, None, None],
            kind,
            align,
            width: Width::Fit,
            note: None,
            class: None,
            wraps: false,
        }
    }

    fn head_in(mut self, format: Format, head: &str) -> Column {
        self.heads[format as usize] = Some(head.to_string());
        self
    }

    /// Its head on the terminal, `width` columns wide.
    pub fn term(self, head: &str, width: Width) -> Column {
        Column {
            width,
            ..self.head_in(Format::Terminal, head)
        }
    }

    pub fn md(self, head: &str) -> Column {
        self.head_in(Format::Markdown, head)
    }

    pub fn html(self, head: &str) -> Column {
        self.head_in(Format::Html, head)
    }

    /// The same head in Markdown and HTML.
    pub fn page(self, head: &str) -> Column {
        self.md(head).html(head)
    }

    pub fn csv(self, head: &str) -> Column {
        self.head_in(Format::Csv, head)
    }

    pub fn class(self, class: &'static str) -> Column {
        Column {
            class: Some(class),
            ..self
        }
    }

    /// See [`Column::wraps`].
    pub fn wrapped(self) -> Column {
        Column {
            wraps: true,
            ..self
        }
    }

    /// Its head in `format`; None when it is not shown there.
    pub fn head(&self, format: Format) -> Option<&str> {
        self.heads[format as usize].as_deref()
    }
}

/// What a cell holds.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// No figure: "-" ("–" in HTML, empty in CSV), never 0.
    None,
    Text(String),
    Num(f64),
    /// A median over runs with its range: the median and "(min-max)"
    /// (HTML: the median in bold, the range small under it; CSV: the
    /// median).
    Spread(Spread),
}

/// A quiet note after a cell's text: joined with "; " in plain text, a
/// grey "⚠" with a title in HTML.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Aside {
    pub text: String,
    pub title: &'static str,
}

/// One cell: a value, marks around its figure ("≥ " before, "†" after;
/// none on a missing one), and how HTML marks it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Cell {
    pub value: Value,
    pub before: &'static str,
    pub after: &'static str,
    /// Painted red in HTML ("bad-text").
    pub bad: bool,
    /// A colour key HTML shows before the text (a server's colour).
    pub swatch: Option<String>,
    /// A second line: in brackets after the text, small under it in HTML.
    pub sub: Option<String>,
    /// The second line is a log's or a program's text: code under the
    /// text in HTML.
    pub sub_code: bool,
    pub aside: Option<Aside>,
}

impl Cell {
    pub fn new(value: Value) -> Cell {
        Cell {
            value,
            before: "",
            after: "",
            bad: false,
            swatch: None,
            sub: None,
            sub_code: false,
            aside: None,
        }
    }

    pub fn text(s: impl Into<String>) -> Cell {
        Cell::new(Value::Text(s.into()))
    }

    /// A figure, or no figure.
    pub fn num(v: Option<f64>) -> Cell {
        Cell::new(v.map_or(Value::None, Value::Num))
    }

    pub fn spread(s: Option<Spread>) -> Cell {
        Cell::new(s.map_or(Value::None, Value::Spread))
    }

    pub fn marked(self, before: &'static str, after: &'static str) -> Cell {
        Cell {
            before,
            after,
            ..self
        }
    }

    pub fn bad(self, bad: bool) -> Cell {
        Cell { bad, ..self }
    }

    pub fn swatch(self, colour: String) -> Cell {
        Cell {
            swatch: Some(colour),
            ..self
        }
    }

    pub fn sub(self, sub: String) -> Cell {
        Cell {
            sub: Some(sub),
            ..self
        }
    }

    /// A second line of a log's or a program's text (code in HTML).
    pub fn sub_code(self, line: String) -> Cell {
        Cell {
            sub: Some(line),
            sub_code: true,
            ..self
        }
    }

    pub fn aside(self, aside: Option<Aside>) -> Cell {
        Cell { aside, ..self }
    }

    /// The cell as plain text in `format` (not HTML): its figure written
    /// by `kind` with its marks, a spread with its range, the aside
    /// after "; ".
    pub fn plain(&self, kind: Kind, format: Format) -> String {
        let text = match &self.value {
            Value::None => return if format == Format::Csv { "" } else { "-" }.into(),
            Value::Text(s) => s.clone(),
            Value::Num(v) => kind.figure(format, *v),
            Value::Spread(s) if format == Format::Csv || s.n <= 1 => kind.figure(format, s.median),
            Value::Spread(s) => format!(
                "{} ({}-{})",
                kind.figure(format, s.median),
                kind.figure(format, s.min),
                kind.figure(format, s.max)
            ),
        };
        let text = if format == Format::Csv {
            text
        } else {
            format!("{}{text}{}", self.before, self.after)
        };
        let text = match &self.sub {
            Some(sub) => format!("{text} ({sub})"),
            None => text,
        };
        match &self.aside {
            Some(a) if text.is_empty() => a.text.clone(),
            Some(a) => format!("{text}; {}", a.text),
            None => text,
        }
    }
}

/// One row: a cell per column, in the columns' order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub cells: Vec<Cell>,
    /// Not a result: painted red in HTML.
    pub bad: bool,
    /// No figure at all: "no data" over the figure columns.
    pub no_data: bool,
}

impl Row {
    pub fn new(cells: Vec<Cell>) -> Row {
        Row {
            cells,
            bad: false,
            no_data: false,
        }
    }
}

/// Columns and rows, rendered by `terminal`, `markdown`, `csv` and
/// `html`.
#[derive(Debug, Clone, Default)]
pub(super) struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// The HTML table's class.
    pub class: Option<String>,
    /// The HTML table's caption.
    pub caption: Option<String>,
    /// Two spaces between terminal columns rather than one.
    pub wide: bool,
}

impl Table {
    /// A table of text already written (the compare, sweep and fits
    /// tables, whose figures carry their own units): each column its
    /// head on the terminal (as wide as its widest cell), in Markdown and
    /// HTML, two spaces between terminal columns.
    pub fn of_text(heads: &[(&str, Align)], rows: Vec<Vec<String>>) -> Table {
        let columns = (heads.iter())
            .map(|(h, a)| Column::new(Kind::Text, *a).term(h, Width::Fit).page(h))
            .collect();
        let rows = (rows.into_iter())
            .map(|r| Row::new(r.into_iter().map(Cell::text).collect()))
            .collect();
        Table {
            columns,
            rows,
            class: None,
            caption: None,
            wide: true,
        }
    }

    /// The columns shown in `format`, with their indexes.
    fn shown(&self, format: Format) -> Vec<(usize, &Column)> {
        (self.columns.iter().enumerate())
            .filter(|(_, c)| c.head(format).is_some())
            .collect()
    }

    /// A column added after the others, with its cell in each row (by
    /// the rows' order).
    pub fn push_column(&mut self, column: Column, cells: Vec<Cell>) {
        assert_eq!(cells.len(), self.rows.len(), "a cell per row");
        self.columns.push(column);
        for (row, cell) in self.rows.iter_mut().zip(cells) {
            row.cells.push(cell);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn spread(median: f64, min: f64, max: f64, n: usize) -> Spread {
        Spread {
            median,
            min,
            max,
            n,
        }
    }

    /// Two columns in every format and a notes column: a server (left)
    /// and a rate (right), rows "puma|x" 14647 over 3 runs and "thin"
    /// with no data.
    pub(in crate::report) fn sample() -> Table {
        let rows = vec![
            Row::new(vec![
                Cell::text("puma|x").swatch("#123".into()),
                Cell::spread(Some(spread(14647.0, 6967.0, 22327.0, 3))).marked("", "†"),
                Cell::text("a, \"b\"").aside(Some(Aside {
                    text: "disturbed <1>".into(),
                    title: "why",
                })),
            ]),
            Row {
                bad: true,
                no_data: true,
                ..Row::new(vec![
                    Cell::text("thin"),
                    Cell::spread(None),
                    Cell::text("1 failed").bad(true),
                ])
            },
        ];
        Table {
            columns: vec![
                Column::new(Kind::Text, Align::Left)
                    .term("server", Width::Min(8))
                    .page("Server")
                    .csv("server"),
                Column::new(Kind::Rate, Align::Right)
                    .term("req/s", Width::Fit)
                    .page("Throughput (req/s)")
                    .csv("throughput_rps"),
                Column::new(Kind::Text, Align::Left)
                    .term("", Width::Fit)
                    .page("Notes")
                    .csv("notes")
                    .class("notes")
                    .wrapped(),
            ],
            rows,
            class: None,
            caption: None,
            wide: false,
        }
    }

    #[test]
    fn each_kind_writes_its_figure_its_own_way_in_each_format() {
        // (kind, value, terminal, Markdown, CSV)
        let cases = [
            (Kind::Count, 12.0, "12", "12", "12"),
            (Kind::Rate, 14646.6, "14647", "14647", "14646.6"),
            (Kind::Latency, 1250.0, "1.25ms", "1.25", "1250.0"),
            (Kind::Bytes, 13107200.0, "12.5 MiB", "12.5", "13107200.0"),
            (Kind::Fixed(3), 0.12345, "0.123", "0.123", "0.123"),
            (Kind::Mib, 13107200.0, "12.5", "12.5", "13107200.0"),
            (Kind::Percent, 0.125, "12.5%", "12.5%", "0.1250"),
        ];
        for (kind, v, term, md, csv) in cases {
            assert_eq!(kind.figure(Format::Terminal, v), term, "{kind:?}");
            assert_eq!(kind.figure(Format::Html, v), term, "{kind:?}");
            assert_eq!(kind.figure(Format::Markdown, v), md, "{kind:?}");
            assert_eq!(kind.figure(Format::Csv, v), csv, "{kind:?}");
        }
    }

    #[test]
    fn a_cell_is_marked_only_when_it_has_a_figure_and_never_in_csv() {
        let c = Cell::num(Some(1500.0)).marked("≥ ", "†");
        assert_eq!(c.plain(Kind::Latency, Format::Terminal), "≥ 1.50ms†");
        assert_eq!(c.plain(Kind::Latency, Format::Csv), "1500.0");
        let none = Cell::num(None).marked("≥ ", "†");
        assert_eq!(none.plain(Kind::Latency, Format::Markdown), "-");
        assert_eq!(none.plain(Kind::Latency, Format::Csv), "");
        let one = Cell::spread(Some(spread(10.0, 10.0, 10.0, 1)));
        assert_eq!(
            one.plain(Kind::Rate, Format::Terminal),
            "10",
            "one run: no range"
        );
        let text = Cell::text("").aside(Some(Aside {
            text: "quiet".into(),
            title: "",
        }));
        assert_eq!(text.plain(Kind::Text, Format::Markdown), "quiet");
        let two = Cell::text("show").sub("GET /a".into());
        assert_eq!(two.plain(Kind::Text, Format::Terminal), "show (GET /a)");
    }

    #[test]
    fn a_column_appears_only_in_the_formats_it_has_a_head_for() {
        let mut t = sample();
        t.push_column(
            Column::new(Kind::Count, Align::Right).csv("only_csv"),
            vec![Cell::num(Some(1.0)), Cell::num(None)],
        );
        let shown = |f| t.shown(f).iter().map(|(i, _)| *i).collect::<Vec<_>>();
        assert_eq!(shown(Format::Csv), [0, 1, 2, 3]);
        assert_eq!(shown(Format::Html), [0, 1, 2]);
        assert!(!t.markdown().contains("only_csv") && t.csv().contains("only_csv"));
    }
}
