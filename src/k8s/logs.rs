//! A segment's load-v1 document, found in its pod's log.
//!
//! A pod's log is stdout and stderr interleaved (the Kubernetes log API
//! does not keep them apart), so the document printed by `--json` may have
//! warnings or `--check` lines around it. The document is the one JSON
//! object whose `schema` is a rackbench load document; nothing else in the
//! log is read.

use serde_json::Value;

/// The schema every segment's document carries.
pub const LOAD_SCHEMA: &str = "rackbench/load-v1";

/// The first load-v1 object in `log` that starts at the beginning of a
/// line, or None.
pub fn load_document(log: &str) -> Option<Value> {
    let mut offset = 0;
    for line in log.split_inclusive('\n') {
        if line.starts_with('{') {
            let mut values =
                serde_json::Deserializer::from_str(&log[offset..]).into_iter::<Value>();
            if let Some(Ok(value)) = values.next() {
                if value.get("schema").and_then(Value::as_str) == Some(LOAD_SCHEMA) {
                    return Some(value);
                }
            }
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "{\n  \"schema\": \"rackbench/load-v1\",\n  \"requests\": 7\n}\n";

    #[test]
    fn finds_the_document_among_other_lines() {
        let rows: &[(String, Option<u64>)] = &[
            (DOC.to_string(), Some(7)),
            (
                format!("warning: segment 1 started 0.2 s late\n{DOC}"),
                Some(7),
            ),
            (
                format!("{{\"check\":\"p99<1ms\",\"met\":false}}\n{DOC}tail\n"),
                Some(7),
            ),
            ("{\"schema\": \"rackbench/mirror-v1\"}\n".to_string(), None),
            ("error: connection refused\n".to_string(), None),
            ("{ not json\n".to_string(), None),
            (String::new(), None),
        ];
        for (log, want) in rows {
            let got = load_document(log).map(|v| v["requests"].as_u64().unwrap());
            assert_eq!(&got, want, "{log:?}");
        }
    }
}
