//! Output documents held to their committed schemas (`schema/*.schema.json`)
//! by boon, a validator that passes the JSON Schema test suite for draft
//! 2020-12: every keyword counts (`enum`, `minimum`, `required`, `$ref`
//! between the files, `if`/`then`, `oneOf`), not a hand-picked few.

use serde_json::Value;
use std::path::PathBuf;

/// The committed schemas.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// Why `doc` breaks schema `name` (e.g. "load-v1"), one line per place, or
/// None when it holds. A schema that does not compile fails the test.
pub fn violations(name: &str, doc: &Value) -> Option<String> {
    let path = dir().join(format!("{name}.schema.json"));
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let index = compiler
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
    schemas.validate(doc, index).err().map(|e| format!("{e}"))
}

/// Fails the test when `doc` (named `what` in the message) breaks `name`.
pub fn assert_valid(name: &str, doc: &Value, what: &str) {
    if let Some(why) = violations(name, doc) {
        panic!("{what} breaks schema/{name}.schema.json:\n{why}");
    }
}

/// Fails the test unless `doc` breaks `name` at `place` (an instance
/// location such as "/load/errors/reset") with a message containing `says`.
pub fn assert_invalid(name: &str, doc: &Value, place: &str, says: &str) {
    let why = violations(name, doc).unwrap_or_else(|| {
        panic!("schema/{name}.schema.json accepted a document breaking {place}")
    });
    assert!(
        why.lines()
            .any(|l| l.contains(&format!("'{place}'")) && l.contains(says)),
        "schema/{name}.schema.json: expected '{says}' at '{place}', got:\n{why}"
    );
}
