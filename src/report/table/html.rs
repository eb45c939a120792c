//! A [`Table`] in HTML: `<table>`, a head row, a row per row, every text
//! escaped. Left-aligned cells have class "l", red ones "bad-text", a
//! row that is no result "bad"; a rate's median is bold with its range
//! small under it; a row without data has one "no data" cell over its
//! figure columns.

use super::{Align, Cell, Column, Format, Kind, Table, Value};
use crate::report::svg::esc;
use std::fmt::Write;

impl Table {
    pub fn html(&self) -> String {
        let shown = self.shown(Format::Html);
        let mut s = match &self.class {
            Some(c) => format!("<table class=\"{c}\">"),
            None => "<table>".to_string(),
        };
        if let Some(c) = &self.caption {
            let _ = write!(s, "<caption>{}</caption>", esc(c));
        }
        s.push_str("<tr>");
        for (_, c) in &shown {
            s.push_str("<th");
            if c.align == Align::Left {
                s.push_str(" class=\"l\"");
            }
            if let Some(n) = &c.note {
                let _ = write!(s, " title=\"{}\"", esc(n));
            }
            let _ = write!(s, ">{}</th>", esc(c.head(Format::Html).unwrap_or("")));
        }
        s.push_str("</tr>");
        let figures = shown.iter().filter(|(_, c)| c.kind.is_figure()).count();
        for row in &self.rows {
            s.push_str(if row.bad {
                "<tr class=\"bad\">"
            } else {
                "<tr>"
            });
            let mut said = false;
            for (i, c) in &shown {
                if row.no_data && c.kind.is_figure() {
                    if !said {
                        let _ = write!(
                            s,
                            "<td colspan=\"{figures}\" class=\"bad-text\">no data</td>"
                        );
                        said = true;
                    }
                    continue;
                }
                td(&mut s, c, &row.cells[*i]);
            }
            s.push_str("</tr>");
        }
        s.push_str("</table>");
        s
    }
}

/// One cell: its classes, colour key, text (a rate's median bold) and
/// quiet aside.
fn td(s: &mut String, c: &Column, cell: &Cell) {
    let classes: Vec<&str> = [
        (c.align == Align::Left).then_some("l"),
        c.class,
        cell.bad.then_some("bad-text"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if classes.is_empty() {
        s.push_str("<td>");
    } else {
        let _ = write!(s, "<td class=\"{}\">", classes.join(" "));
    }
    if let Some(colour) = &cell.swatch {
        let _ = write!(s, "<span style=\"color:{colour}\">■</span> ");
    }
    let marked = |v: f64| {
        format!(
            "{}{}{}",
            cell.before,
            c.kind.figure(Format::Html, v),
            cell.after
        )
    };
    match &cell.value {
        Value::None => s.push('–'),
        Value::Text(t) => s.push_str(&esc(&format!("{}{t}{}", cell.before, cell.after))),
        Value::Num(v) => s.push_str(&esc(&marked(*v))),
        Value::Spread(sp) if c.kind == Kind::Rate => {
            let _ = write!(s, "<b>{}</b>", esc(&marked(sp.median)));
            if sp.n > 1 {
                let _ = write!(
                    s,
                    "<br><small>{}–{}</small>",
                    c.kind.figure(Format::Html, sp.min),
                    c.kind.figure(Format::Html, sp.max)
                );
            }
        }
        Value::Spread(sp) => s.push_str(&esc(&marked(sp.median))),
    }
    match &cell.sub {
        Some(sub) if cell.sub_code => {
            let _ = write!(s, "<br><code>{}</code>", esc(sub));
        }
        Some(sub) => {
            let _ = write!(s, "<br><small>{}</small>", esc(sub));
        }
        None => {}
    }
    if let Some(a) = &cell.aside {
        let _ = write!(
            s,
            " <span class=\"note\" title=\"{}\">⚠ {}</span>",
            a.title,
            esc(&a.text)
        );
    }
    s.push_str("</td>");
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;

    #[test]
    fn text_is_escaped_and_a_row_without_data_spans_its_figures() {
        let mut t = sample();
        t.columns[1].note = Some("OK responses <per> second".into());
        assert_eq!(
            t.html(),
            "<table><tr><th class=\"l\">Server</th><th title=\"OK responses &lt;per&gt; second\">Throughput (req/s)</th><th class=\"l\">Notes</th></tr>\
             <tr><td class=\"l\"><span style=\"color:#123\">■</span> puma|x</td><td><b>14647†</b><br><small>6967–22327</small></td>\
             <td class=\"l notes\">a, &quot;b&quot; <span class=\"note\" title=\"why\">⚠ disturbed &lt;1&gt;</span></td></tr>\
             <tr class=\"bad\"><td class=\"l\">thin</td><td colspan=\"1\" class=\"bad-text\">no data</td><td class=\"l notes bad-text\">1 failed</td></tr></table>"
        );
    }

    #[test]
    fn a_caption_heads_the_table_and_a_second_line_is_small_under_its_text() {
        let mut t = sample();
        t.rows.truncate(1);
        t.caption = Some("puma <1>".into());
        t.class = Some("endpoints".into());
        t.rows[0].cells[0] = super::super::Cell::text("show").sub("GET /a?b=<c>".into());
        let page = t.html();
        assert!(
            page.starts_with("<table class=\"endpoints\"><caption>puma &lt;1&gt;</caption><tr>"),
            "{page}"
        );
        assert!(
            page.contains("<td class=\"l\">show<br><small>GET /a?b=&lt;c&gt;</small></td>"),
            "{page}"
        );
    }
}
