//! The live page served at `/`: one self-contained HTML document (inline
//! style and script, nothing loaded from elsewhere) that reads
//! `/live.json` each second and shows it: what runs and the plan's
//! progress, throughput and latency now and as charts over the last
//! minutes, the totals and errors, the server's CPU and memory, telemetry
//! and the mirror's shadows. The document is page.html beside this file.
//!
//! Each figure's element carries `data-field` (its path in live-v1) and
//! `data-value` (the raw value); `<body>` carries `data-seq` (the snapshot
//! on screen) and `data-state` (waiting, running, done, lost), for tests
//! (tests/live_page.rs) and scripts.

/// The page's HTML.
pub fn html() -> &'static str {
    include_str!("page.html")
}

#[cfg(test)]
mod tests {
    use super::super::{
        Counts, LatencyNow, Phase, Proxy, Second, ServerNow, Shadow, Snapshot, TelemetryNow,
        TrialLabels,
    };
    use super::html;
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// A snapshot with every optional part there, so every path of
    /// live-v1 is in its document.
    fn full() -> Value {
        let second = Second {
            t_s: 1.0,
            rps: 10.0,
            ok: 10,
            errors: 0,
            p50_ms: Some(1.0),
            p99_ms: Some(2.0),
        };
        Snapshot {
            seq: 1,
            elapsed_s: 1.0,
            command: "run".into(),
            done: false,
            labels: Some(TrialLabels::default()),
            phase: Phase::Counted,
            trials_done: 0,
            trials_total: Some(2),
            series: BTreeMap::new(),
            trial: Counts::default(),
            seconds: vec![second],
            latency: Some(LatencyNow {
                p50_ms: 1.0,
                p90_ms: 1.5,
                p99_ms: 2.0,
                p999_ms: 3.0,
                max_ms: 4.0,
            }),
            server: Some(ServerNow::default()),
            telemetry: Some(TelemetryNow::default()),
            shadows: vec![Shadow::default()],
            proxy: Some(Proxy::default()),
        }
        .to_json()
    }

    /// Every `ATTR="VALUE"` in the page's markup.
    fn attrs<'a>(page: &'a str, attr: &str) -> Vec<&'a str> {
        let key = format!("{attr}=\"");
        page.split(key.as_str())
            .skip(1)
            .map(|rest| &rest[..rest.find('"').unwrap()])
            .collect()
    }

    /// The value at a dotted path (`totals.ok`, `shadows.0.name`); None
    /// when a key along it is missing (a null leaf is there).
    fn at<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
        path.split('.').try_fold(doc, |v, k| match v {
            Value::Array(a) => a.get(k.parse::<usize>().ok()?),
            _ => v.get(k),
        })
    }

    #[test]
    fn every_field_the_page_shows_is_in_live_v1() {
        let doc = full();
        let page = html();
        let mut paths: Vec<String> = attrs(page, "data-field")
            .into_iter()
            .chain(attrs(page, "data-show"))
            .map(String::from)
            .collect();
        // The shadows' rows are made by the script, a path per cell.
        for cell in page.split("field: p + \"").skip(1) {
            paths.push(format!("shadows.0.{}", &cell[..cell.find('"').unwrap()]));
        }
        // The charts read each second's time and these.
        assert!(page.contains("s.t_s"), "the charts' time");
        paths.push("seconds.0.t_s".into());
        for name in ["rps", "errors", "p50_ms", "p99_ms"] {
            assert!(
                page.contains(&format!("pts(\"{name}\")")),
                "the charts read {name}"
            );
            paths.push(format!("seconds.0.{name}"));
        }
        assert!(paths.len() > 40, "{paths:?}");
        let missing: Vec<&String> = paths.iter().filter(|p| at(&doc, p).is_none()).collect();
        assert!(
            missing.is_empty(),
            "the page shows paths live-v1 lacks: {missing:?}"
        );
        assert!(at(&doc, "totals.nothing").is_none());
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        let page = html();
        // The one address in it is SVG's namespace, a name, not a load.
        let code: Vec<String> = page
            .replace("\"http://www.w3.org/2000/svg\"", "")
            .lines()
            .filter(|l| !l.trim_start().starts_with("// "))
            .map(String::from)
            .collect();
        let code = code.join("\n");
        for bad in [
            "http:", "https:", "//", "src=", "url(", "@import", "<iframe", "<img",
        ] {
            assert!(!code.contains(bad), "the page names {bad}");
        }
        assert_eq!(
            attrs(page, "href"),
            ["data:,"],
            "no link but the empty icon"
        );
        assert_eq!(page.matches("fetch(").count(), 1);
        assert!(
            page.contains("fetch(\"live.json\""),
            "it reads live.json where it was served"
        );
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.trim_end().ends_with("</html>"));
    }
}
