//! A [`Table`] in Markdown: a head row, an alignment row, a row per row;
//! every cell escaped once (`|`, `<` and line breaks). A row without data
//! has dashes in its figure columns and "**no data: …**" in its wrapped
//! (notes) column.

use super::{Align, Format, Table};
use std::fmt::Write;

/// A cell's text safe inside a Markdown table row: `<` escaped too, so a
/// frame such as `<main>` is not read as an HTML tag. Reached only through
/// table/mod.rs's `pub(super) use` (this module is private); naming
/// `crate::report` here would make an import circle with each report
/// file that mod.rs uses and that escapes a cell (report/ab.rs).
pub(crate) fn md_cell(s: &str) -> String {
    (s.replace('|', "\\|").replace('<', "\\<")).replace(['\n', '\r'], " ")
}

impl Table {
    /// The table's lines, each ending in a line break.
    pub fn markdown(&self) -> String {
        let shown = self.shown(Format::Markdown);
        let heads: Vec<String> = (shown.iter())
            .map(|(_, c)| md_cell(c.head(Format::Markdown).unwrap_or("")))
            .collect();
        let mut s = format!("| {} |\n|", heads.join(" | "));
        for (_, c) in &shown {
            s.push_str(match c.align {
                Align::Left => ":--|",
                Align::Right => "--:|",
            });
        }
        s.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = (shown.iter())
                .map(|(i, c)| {
                    let text = row.cells[*i].plain(c.kind, Format::Markdown);
                    match (row.no_data, c.kind.is_figure(), c.wraps) {
                        (true, true, _) => "-".into(),
                        (true, false, true) => format!("**no data: {}**", md_cell(&text)),
                        _ => md_cell(&text),
                    }
                })
                .collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    #[test]
    fn pipes_are_escaped_once_and_columns_align_by_their_side() {
        assert_eq!(
            sample().markdown(),
            "| Server | Throughput (req/s) | Notes |\n|:--|--:|:--|\n\
             | puma\\|x | 14647 (6967-22327)† | a, \"b\"; disturbed \\<1> |\n\
             | thin | - | **no data: 1 failed** |\n"
        );
        assert_eq!(md_cell("a|b\nc\r"), "a\\|b c ");
        assert_eq!(md_cell("block in <main>"), "block in \\<main>");
    }
}
