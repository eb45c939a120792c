//! A proposal as `tune gc` reports it, and the share in words.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One setting to try.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// The rule's name (docs/TUNING.md): "heap_init_slots", ...
    pub rule: String,
    /// Environment variable name to value.
    pub env: BTreeMap<String, String>,
    /// The figure and the threshold that fired the rule, in words.
    pub evidence: String,
    /// The Rubies whose GC reads these variables ("3.3 and later").
    pub rubies: String,
}

/// "0.4%", "12%".
pub fn pct(share: f64) -> String {
    let p = share * 100.0;
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}
