//! The condition table that budget.rs, slow.rs and restart.rs each put
//! under a section's main table, in Markdown and HTML: Server | Load |
//! the setting's own column when the study's settings differ | the
//! condition's columns, one row per group, a row of dashes for a group
//! without the condition; and the start of their per-group terminal lines.
//!
//! It knows no condition and decides nothing: the callers give the heads,
//! the label and the cells, and whether there is a table at all; the
//! table model (mod.rs) writes the Markdown and HTML.

use super::{Align, Cell as ModelCell, Column, Kind, Row, Table, Value};
use crate::report::svg::esc;
use crate::report::{load_label, Group};
use std::fmt::Write;

/// One cell: its text, and whether HTML marks it as bad.
pub(in crate::report) struct Cell {
    pub text: String,
    pub bad: bool,
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell { text, bad: false }
    }
}

/// One group's row.
pub(in crate::report) struct ConditionRow<'a> {
    pub group: &'a Group,
    /// Its setting, shown only when the table has a label column.
    pub label: String,
    /// None for a group without the condition: a row of dashes.
    pub cells: Option<Vec<Cell>>,
}

pub(in crate::report) struct ConditionTable<'a> {
    /// "### {heading}" in Markdown; in HTML only when `html_titled`.
    pub heading: &'a str,
    /// A paragraph under the heading, with it.
    pub note: Option<&'a str>,
    /// Whether the HTML page shows the heading and note too.
    pub html_titled: bool,
    /// The HTML table's class.
    pub class: &'a str,
    /// The label column's head, when the study's settings differ.
    pub label: Option<&'a str>,
    /// The condition's own columns.
    pub heads: &'a [(&'a str, Align)],
    pub rows: Vec<ConditionRow<'a>>,
}

/// A condition's lines under the terminal table: its header `line`, then
/// for each group `rest` gives words to (its setting when the study's
/// differ, its figures) a line that starts with the group. Nothing
/// without a header line.
pub(in crate::report) fn terminal_lines(
    s: &mut String,
    groups: &[Group],
    line: Option<String>,
    front_width: Option<usize>,
    rest: impl Fn(&Group) -> Option<String>,
) {
    let Some(line) = line else { return };
    let _ = writeln!(s, "\n{line}");
    for g in groups {
        if let Some(r) = rest(g) {
            let _ = writeln!(s, "{}{r}", line_start(g, front_width));
        }
    }
}

/// One row per group: its label and its cells (None: dashes).
pub(in crate::report) fn rows<'a>(
    groups: &[&'a Group],
    label: impl Fn(&Group) -> String,
    cells: impl Fn(&Group) -> Option<Vec<Cell>>,
) -> Vec<ConditionRow<'a>> {
    groups
        .iter()
        .map(|g| ConditionRow {
            group: g,
            label: label(g),
            cells: cells(g),
        })
        .collect()
}

/// The table on the model: Server, Load, the label column when asked,
/// the condition's columns; a group without the condition has no figure
/// in them ("-" in Markdown, "–" in HTML).
fn model(t: &ConditionTable) -> Table {
    let text = |head: &str, align| Column::new(Kind::Text, align).page(head);
    let mut columns = vec![text("Server", Align::Left), text("Load", Align::Right)];
    columns.extend(t.label.map(|l| text(l, Align::Left)));
    columns.extend(t.heads.iter().map(|(h, a)| text(h, *a)));
    let rows = (t.rows.iter())
        .map(|r| {
            let mut cells = vec![
                ModelCell::text(r.group.planned.variant.clone()),
                ModelCell::text(load_label(&r.group.planned)),
            ];
            if t.label.is_some() {
                cells.push(ModelCell::text(r.label.clone()));
            }
            match &r.cells {
                Some(c) => {
                    cells.extend(c.iter().map(|c| ModelCell::text(c.text.clone()).bad(c.bad)))
                }
                None => cells.extend(t.heads.iter().map(|_| ModelCell::new(Value::None))),
            }
            Row::new(cells)
        })
        .collect();
    Table {
        columns,
        rows,
        class: Some(t.class.to_string()),
        caption: None,
        wide: false,
    }
}

/// The table in Markdown, heading and note above, a blank line below;
/// nothing without one.
pub(in crate::report) fn markdown(s: &mut String, t: Option<ConditionTable>) {
    let Some(t) = t else { return };
    let _ = write!(s, "### {}\n\n", t.heading);
    if let Some(n) = t.note {
        let _ = write!(s, "{n}\n\n");
    }
    s.push_str(&model(&t).markdown());
    s.push('\n');
}

/// The table in HTML, with its heading and note when `html_titled`;
/// nothing without one.
pub(in crate::report) fn html(s: &mut String, t: Option<ConditionTable>) {
    let Some(t) = t else { return };
    if t.html_titled {
        let _ = write!(s, "<h3>{}</h3>", esc(t.heading));
        if let Some(n) = t.note {
            let _ = write!(s, "<p class=\"note\">{}</p>", esc(n));
        }
    }
    s.push_str(&model(&t).html());
}

/// The start of a group's line under the terminal table: server, app,
/// its front in `front_width` columns when given, load; the caller
/// writes the rest.
pub(in crate::report) fn line_start(g: &Group, front_width: Option<usize>) -> String {
    let mut s = format!("  {:<24} {:<8} ", g.planned.variant, g.planned.app);
    if let Some(w) = front_width {
        let _ = write!(s, "{:<w$} ", g.planned.front());
    }
    let _ = write!(s, "{:<10} ", load_label(&g.planned));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed stored trial's group, as `variant` direct with the
    /// app hello at 4 connections.
    fn group(variant: &str) -> Group {
        let mut g = crate::report::memory::tests::group(|_| {});
        g.planned.variant = variant.into();
        g.planned.app = "hello".into();
        g.planned.behind = "none".into();
        g.planned.shape.rate = None;
        g.planned.shape.connections = 4;
        g
    }

    fn table<'a>(groups: &'a [Group], label: Option<&'a str>) -> ConditionTable<'a> {
        ConditionTable {
            heading: "Things",
            note: Some("What they <are>."),
            html_titled: true,
            class: "things",
            label,
            heads: &[("Kind", Align::Left), ("Count", Align::Right)],
            rows: vec![
                ConditionRow {
                    group: &groups[0],
                    label: "some".into(),
                    cells: Some(vec![
                        "a".to_string().into(),
                        Cell {
                            text: "2".into(),
                            bad: true,
                        },
                    ]),
                },
                ConditionRow {
                    group: &groups[1],
                    label: "none".into(),
                    cells: None,
                },
            ],
        }
    }

    #[test]
    fn a_group_without_the_condition_is_dashes_and_the_label_column_shows_only_when_asked() {
        let groups = [group("puma|x"), group("thin")];
        let cases: [(Option<&str>, &str, &str); 2] = [
            (
                None,
                "### Things\n\nWhat they <are>.\n\n| Server | Load | Kind | Count |\n|:--|--:|:--|--:|\n\
                 | puma\\|x | 4 conn | a | 2 |\n| thin | 4 conn | - | - |\n\n",
                "<h3>Things</h3><p class=\"note\">What they &lt;are&gt;.</p><table class=\"things\">\
                 <tr><th class=\"l\">Server</th><th>Load</th><th class=\"l\">Kind</th><th>Count</th></tr>\
                 <tr><td class=\"l\">puma|x</td><td>4 conn</td><td class=\"l\">a</td><td class=\"bad-text\">2</td></tr>\
                 <tr><td class=\"l\">thin</td><td>4 conn</td><td class=\"l\">–</td><td>–</td></tr></table>",
            ),
            (
                Some("Setting"),
                "### Things\n\nWhat they <are>.\n\n| Server | Load | Setting | Kind | Count |\n|:--|--:|:--|:--|--:|\n\
                 | puma\\|x | 4 conn | some | a | 2 |\n| thin | 4 conn | none | - | - |\n\n",
                "<h3>Things</h3><p class=\"note\">What they &lt;are&gt;.</p><table class=\"things\">\
                 <tr><th class=\"l\">Server</th><th>Load</th><th class=\"l\">Setting</th><th class=\"l\">Kind</th><th>Count</th></tr>\
                 <tr><td class=\"l\">puma|x</td><td>4 conn</td><td class=\"l\">some</td><td class=\"l\">a</td><td class=\"bad-text\">2</td></tr>\
                 <tr><td class=\"l\">thin</td><td>4 conn</td><td class=\"l\">none</td><td class=\"l\">–</td><td>–</td></tr></table>",
            ),
        ];
        for (label, md, page) in cases {
            let mut s = String::new();
            markdown(&mut s, Some(table(&groups, label)));
            assert_eq!(s, md, "{label:?}");
            let mut s = String::new();
            html(&mut s, Some(table(&groups, label)));
            assert_eq!(s, page, "{label:?}");
        }
    }

    #[test]
    fn an_untitled_html_table_has_neither_heading_nor_note() {
        let groups = [group("puma"), group("thin")];
        let mut t = table(&groups, None);
        t.html_titled = false;
        let mut s = String::new();
        html(&mut s, Some(t));
        assert!(s.starts_with("<table class=\"things\">"), "{s}");
    }

    #[test]
    fn a_terminal_line_starts_with_server_app_front_when_asked_and_load() {
        let g = group("puma");
        assert_eq!(
            line_start(&g, Some(9)),
            format!(
                "  {:<24} {:<8} {:<9} {:<10} ",
                "puma", "hello", "direct", "4 conn"
            )
        );
        assert_eq!(
            line_start(&g, None),
            format!("  {:<24} {:<8} {:<10} ", "puma", "hello", "4 conn")
        );
    }
}
