//! A finding of the doctor and how much it matters: the one type every
//! check returns. It lives apart from mod.rs, which runs the checks, so a
//! check file and the runner do not import each other.

use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Advice: the study can run as it is.
    Note,
    /// Stands in the way of a study.
    Problem,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Note => "note",
            Status::Problem => "problem",
        }
    }
}

/// One thing the doctor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The check's stable name, e.g. "somaxconn".
    pub check: &'static str,
    pub status: Status,
    /// What was found, in words.
    pub found: String,
    /// What to do about it; None when nothing needs doing.
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: &'static str, found: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Ok,
            found: found.into(),
            fix: None,
        }
    }

    pub fn note(check: &'static str, found: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Note,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn problem(
        check: &'static str,
        found: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            status: Status::Problem,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}
