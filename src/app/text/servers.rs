//! `rackbench servers`' table: an adapter a line, installed or not, its
//! version and what it can do.

use crate::app::servers::Row;

/// The terminal table: each column as wide as its widest cell, so a long
/// version (jruby-jetty's names three components) or a long name from a
/// servers file keeps the columns after it in line.
pub fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let can = [
                (r.processes, "workers"),
                (r.threads, "threads"),
                (r.unix_socket, "unix socket"),
                (r.keep_alive, "keep-alive"),
            ]
            .iter()
            .filter(|(yes, _)| *yes)
            .map(|(_, what)| *what)
            .collect::<Vec<_>>()
            .join(", ");
            [
                r.name.clone(),
                if r.installed { "yes" } else { "no" }.into(),
                r.version.clone().unwrap_or_else(|| "-".into()),
                can,
            ]
        })
        .collect();
    let head = ["server", "installed", "version", "can do"].map(String::from);
    let width = |i: usize| {
        std::iter::once(&head)
            .chain(&cells)
            .map(|c| c[i].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    std::iter::once(&head)
        .chain(&cells)
        .map(|[name, installed, version, can]| {
            let line = format!("{name:<w0$} {installed:<w1$} {version:<w2$} {can}");
            format!("{}\n", line.trim_end())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, version: Option<&str>, processes: bool, threads: bool) -> Row {
        Row {
            name: name.into(),
            installed: version.is_some(),
            version: version.map(String::from),
            description: String::new(),
            processes,
            threads,
            unix_socket: false,
            keep_alive: false,
            command: String::new(),
            notes: String::new(),
        }
    }

    /// Regression: jruby-jetty's version (jruby, jruby-rack and jetty, 66
    /// characters) pushed its "can do" past every other row's, which were
    /// padded to 40.
    #[test]
    fn a_long_version_or_name_keeps_every_column_in_line() {
        let jetty = "jruby-complete 9.4.15.0 / jruby-rack 1.2.6 / jetty 9.4.57.v20241219";
        // (rows, the "can do" column's offset)
        let tables: &[(&[Row], usize)] = &[
            (
                &[
                    row("jruby-jetty", Some(jetty), true, true),
                    row("puma", Some("puma version 5.6.5"), true, true),
                    row("webrick", None, false, false),
                ],
                12 + 10 + jetty.len() + 1,
            ),
            (
                &[
                    row("my-very-long-server", Some("1.0"), true, false),
                    row("puma", Some("puma version 5.6.5"), true, true),
                ],
                20 + 10 + "puma version 5.6.5".len() + 1,
            ),
            (&[], 6 + 1 + 9 + 1 + 7 + 1),
        ];
        for (rows, at) in tables {
            let text = table(rows);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), rows.len() + 1, "{text}");
            assert_eq!(lines[0].find("can do"), Some(*at), "{text}");
            for (line, r) in lines[1..].iter().zip(rows.iter()) {
                let can = if r.processes { Some(*at) } else { None };
                assert_eq!(line.find("workers"), can, "{text}");
                assert!(line.starts_with(&r.name), "{text}");
            }
        }
    }
}
