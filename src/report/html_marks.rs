//! The small marks every section of the HTML page writes the same way: a
//! run's status as a coloured word, and the colour of a group's note on a
//! chart (red when the group is no result, grey when the mark is quiet).
//! It holds no section and never decides what a status or a note is.

use super::svg::RED;
use super::{Group, Status};

/// The grey of a quiet mark ("≥", "†") and of a step's number.
pub(super) const GREY: &str = "#888";

/// Red for a row that is not a result, grey for a quiet mark ("≥", "†").
pub(super) fn alarm(g: &Group) -> &'static str {
    if g.is_result() {
        GREY
    } else {
        RED
    }
}

/// A run's status as its word, coloured by its class (red unless ok).
pub(super) fn status_cell(s: Status) -> String {
    format!("<span class=\"status-{0}\">{0}</span>", s.label())
}
