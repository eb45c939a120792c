//! A plan's mistakes: the error, and where in the file it is.
//!
//! Its own file so that the checks (check.rs) and the sweep (sweep.rs)
//! can both place an error at its line without importing each other or
//! the schema.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PlanError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("{file}, line {line}: {message}")]
    At {
        file: String,
        line: usize,
        message: String,
    },
    /// Text that is not TOML: the place is all there is to name.
    #[error("{file}, line {line}, column {column}: {message}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot read plan {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
}

/// How a check makes its error: `at(needle, message)` is the mistake at
/// the first line of `text` that holds `needle`, in `file`.
pub(super) fn at_line<'a>(text: &'a str, file: &'a str) -> impl Fn(&str, String) -> PlanError + 'a {
    move |needle: &str, message: String| PlanError::At {
        file: file.to_string(),
        line: line_of(text, needle),
        message,
    }
}

/// The first line of `text` that holds `needle`, counted from 1 (1 if
/// none does).
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}
