//! A [`Table`] on the terminal: a head line, then a line per row, each
//! cell padded to its column's width and aligned, one space between (two
//! in a wide table), no space at a line's end; a
//! wrapped column (notes) after the row in brackets, wrapped to the
//! terminal's width under its first character.

use super::{Align, Column, Format, Table, Width};
use std::fmt::Write;

impl Table {
    /// The table for a terminal `width` columns wide.
    pub fn terminal(&self, width: usize) -> String {
        let shown = self.shown(Format::Terminal);
        let (plain, wrapped): (Vec<_>, Vec<_>) = shown.iter().partition(|(_, c)| !c.wraps);
        let widths: Vec<usize> = plain.iter().map(|(i, c)| self.width_of(*i, c)).collect();
        let heads: Vec<String> = (plain.iter().zip(&widths))
            .map(|((_, c), w)| pad(c.head(Format::Terminal).unwrap_or(""), c.align, *w))
            .collect();
        let gap = if self.wide { "  " } else { " " };
        let mut s = heads.join(gap).trim_end().to_string();
        for (_, c) in &wrapped {
            match c.head(Format::Terminal) {
                Some(h) if !h.is_empty() => {
                    let _ = write!(s, "  {h}");
                }
                _ => {}
            }
        }
        s.push('\n');
        for row in &self.rows {
            let mut cells: Vec<String> = Vec::new();
            let mut said = false;
            for ((i, c), w) in plain.iter().zip(&widths) {
                if row.no_data && c.kind.is_figure() {
                    if !said {
                        cells.push(pad("no data", c.align, *w));
                        said = true;
                    }
                    continue;
                }
                cells.push(pad(
                    &row.cells[*i].plain(c.kind, Format::Terminal),
                    c.align,
                    *w,
                ));
            }
            let notes: Vec<String> = (wrapped.iter())
                .map(|(i, c)| row.cells[*i].plain(c.kind, Format::Terminal))
                .filter(|n| !n.is_empty())
                .map(|n| format!("({n})"))
                .collect();
            push_row(&mut s, cells.join(gap).trim_end(), &notes.join(" "), width);
        }
        s
    }

    /// The table on the terminal when it has no wrapped column (nothing
    /// to fit to the terminal's width).
    pub fn terminal_lines(&self) -> String {
        self.terminal(usize::MAX)
    }

    /// Column `i`'s width: its minimum, or its widest cell or head.
    fn width_of(&self, i: usize, c: &Column) -> usize {
        match c.width {
            Width::Min(w) => w,
            Width::Fit => (self.rows.iter())
                .filter(|r| !(r.no_data && c.kind.is_figure()))
                .map(|r| r.cells[i].plain(c.kind, Format::Terminal).chars().count())
                .chain(c.head(Format::Terminal).map(|h| h.chars().count()))
                .max()
                .unwrap_or(0),
        }
    }
}

/// The narrowest a notes column gets, however wide the row before it.
pub(in crate::report) const MIN_NOTES_WIDTH: usize = 36;

/// `text` broken at spaces into lines of at most `width` characters (a
/// word longer than that stands alone on its line).
pub(in crate::report) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let need = line.chars().count() + 1 + word.chars().count();
        if !line.is_empty() && need > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A table row, then its notes two spaces after it, wrapped to `width`
/// with the continuation lines under the notes' first character.
pub(in crate::report) fn push_row(s: &mut String, row: &str, notes: &str, width: usize) {
    s.push_str(row);
    if notes.is_empty() {
        s.push('\n');
        return;
    }
    let indent = row.chars().count() + 2;
    let room = width.saturating_sub(indent).max(MIN_NOTES_WIDTH);
    for (i, line) in wrap(notes, room).iter().enumerate() {
        if i == 0 {
            let _ = writeln!(s, "  {line}");
        } else {
            let _ = writeln!(s, "{:indent$}{line}", "");
        }
    }
}

/// `text` padded with spaces to `width` characters on the side away from
/// `align`; longer text is left whole.
fn pad(text: &str, align: Align, width: usize) -> String {
    let room = " ".repeat(width.saturating_sub(text.chars().count()));
    match align {
        Align::Left => format!("{text}{room}"),
        Align::Right => format!("{room}{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

    #[test]
    fn cells_are_padded_to_their_column_and_notes_follow_in_brackets() {
        let t = sample();
        let text = t.terminal(140);
        assert_eq!(
            text,
            "server                 req/s\n\
             puma|x   14647 (6967-22327)†  (a, \"b\"; disturbed <1>)\n\
             thin                 no data  (1 failed)\n"
        );
    }

    #[test]
    fn a_fitted_column_is_as_wide_as_its_widest_cell_or_head() {
        let mut t = sample();
        t.rows.truncate(1);
        t.rows[0].cells[1] = super::super::Cell::num(Some(7.0));
        // "req/s" is wider than "7": the head sets the width.
        assert_eq!(
            t.terminal(140).lines().nth(1),
            Some("puma|x       7  (a, \"b\"; disturbed <1>)")
        );
        assert_eq!(
            pad("abc", Align::Left, 2),
            "abc",
            "longer text is left whole"
        );
        assert_eq!(pad("ab", Align::Right, 4), "  ab");
    }

    #[test]
    fn a_wide_table_has_two_spaces_between_columns_and_none_at_a_lines_end() {
        let rows = vec![
            vec!["a".into(), "10".into(), "".into()],
            vec!["long".into(), "2".into(), "x".into()],
        ];
        let heads = [
            ("name", Align::Left),
            ("n", Align::Right),
            ("", Align::Left),
        ];
        let t = Table::of_text(&heads, rows);
        assert_eq!(t.terminal_lines(), "name   n\na     10\nlong   2  x\n");
    }

    #[test]
    fn notes_wrap_to_the_width_under_their_first_character() {
        let mut t = sample();
        t.rows.truncate(1);
        t.rows[0].cells[1] = super::super::Cell::num(Some(7.0));
        t.rows[0].cells[2] =
            super::super::Cell::text("one two three four five six seven eight nine ten");
        let text = t.terminal(40);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 2, "{text}");
        let at = lines[1].chars().position(|c| c == '(').unwrap();
        assert!(lines[2].starts_with(&" ".repeat(at)), "{text}");
        assert_ne!(lines[2].chars().nth(at), Some(' '), "{text}");
    }

    #[test]
    fn notes_wrap_at_spaces_within_the_width() {
        // (text, width, lines)
        let cases: &[(&str, usize, &[&str])] = &[
            ("", 10, &[]),
            ("short", 10, &["short"]),
            ("one two three", 7, &["one two", "three"]),
            ("one two three", 8, &["one two", "three"]),
            ("a verylongword b", 4, &["a", "verylongword", "b"]),
            ("  spaced   out  ", 20, &["spaced out"]),
            ("≥: ages ≥ bound", 7, &["≥: ages", "≥ bound"]),
        ];
        for (text, width, want) in cases {
            assert_eq!(wrap(text, *width), *want, "{text:?} at {width}");
        }
    }

    #[test]
    fn a_rows_notes_continue_under_their_first_character() {
        let mut s = String::new();
        let notes = "(†: p99 from 500 latencies, fewer than 10 beyond; †: throughput from 120 responses (under 200))";
        push_row(&mut s, "row", notes, 50);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.len() > 1, "{s}");
        assert!(lines[0].starts_with("row  (†"), "{s}");
        for l in &lines[1..] {
            assert!(l.starts_with("     ") && !l.starts_with("      "), "{l:?}");
        }
        // The narrowest notes column is kept however long the row.
        let mut s = String::new();
        push_row(&mut s, &"x".repeat(200), "a b", 50);
        assert_eq!(s, format!("{}  a b\n", "x".repeat(200)));
        let mut s = String::new();
        push_row(&mut s, "row", "", 50);
        assert_eq!(s, "row\n");
    }
}
