//! A small JSON Schema checker: enough of the keywords our committed
//! schemas use (type, const, required, properties, items) to hold the
//! output to its contract without pulling in a validator crate.

use serde_json::Value;

/// Returns every place where `doc` breaks `schema`, as "path: reason".
pub fn violations(schema: &Value, doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, doc, "$", &mut out);
    out
}

fn check(schema: &Value, doc: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(c) = schema.get("const") {
        if c != doc {
            out.push(format!("{path}: expected {c}, got {doc}"));
        }
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => doc.is_object(),
            "array" => doc.is_array(),
            "string" => doc.is_string(),
            "boolean" => doc.is_boolean(),
            "integer" => doc.is_u64() || doc.is_i64(),
            "number" => doc.is_number(),
            other => panic!("schema uses type '{other}', which this checker does not know"),
        };
        if !ok {
            out.push(format!("{path}: expected {t}, got {doc}"));
            return;
        }
    }
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for key in req.iter().filter_map(Value::as_str) {
            if doc.get(key).is_none() {
                out.push(format!("{path}: missing required field '{key}'"));
            }
        }
    }
    if let (Some(props), Some(obj)) = (
        schema.get("properties").and_then(Value::as_object),
        doc.as_object(),
    ) {
        for (key, sub) in props {
            if let Some(v) = obj.get(key) {
                check(sub, v, &format!("{path}.{key}"), out);
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), doc.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            check(items, v, &format!("{path}[{i}]"), out);
        }
    }
}
