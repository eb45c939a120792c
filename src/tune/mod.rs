//! The GC's settings a server's own GC statistics call for (`rackbench
//! tune gc`, issue 41): rules from a control trial's telemetry (runs,
//! time share, and the GC's detail: heap, limits, triggers) to proposals,
//! each an environment to set, the rule's name, the figure and threshold
//! that fired it, and the Rubies whose GC reads those variables. Every
//! rule, its threshold and its source are in docs/TUNING.md.
//!
//! Pure: no I/O. Whether a proposal helps is the A/B's to say
//! (`app::tune`); these rules only say what to try.

pub mod document;
mod proposal;
mod rules;

use crate::telemetry::Telemetry;

pub use proposal::{pct, Proposal};
pub use rules::{
    FEW_REQUESTS, HEAP_TARGET_REQUESTS, MALLOC_MINOR_SHARE, MAX_HEAP_SLOTS, NEWOBJ_RUNS_PER_1K,
    NOTHING_TO_GAIN_SHARE,
};

/// What the rules make of a control's telemetry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Advice {
    /// Settings to try, one rule each.
    pub proposals: Vec<Proposal>,
    /// Why there is nothing to try ("the GC took 0.4% of the time, under
    /// 2%"), when there is not.
    pub nothing_to_gain: Option<String>,
    /// Rules whose figure fired but whose variables this Ruby ignores.
    pub not_for_this_ruby: Vec<String>,
}

/// Why the telemetry cannot be tuned from.
#[derive(Debug, Clone, PartialEq)]
pub enum Unusable {
    /// No GC detail: a middleware older than issue 41.
    NoDetail,
    /// Not CRuby (JRuby's GC is the JVM's).
    NotCRuby(String),
    /// Too few requests for the GC to show its pace.
    TooFewRequests(u64),
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::NoDetail => write!(f, "the telemetry has no GC detail"),
            Unusable::NotCRuby(e) => write!(
                f,
                "{e} is not CRuby: its GC is not the one RUBY_GC_* variables set"
            ),
            Unusable::TooFewRequests(n) => write!(
                f,
                "the control served {n} requests, under {FEW_REQUESTS}: too few to see the GC \
                 at work; give a longer -d"
            ),
        }
    }
}

/// A Ruby version as major and minor ("3.3.8" -> (3, 3)).
pub fn ruby_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The proposals a control's telemetry calls for.
pub fn advise(t: &Telemetry) -> Result<Advice, Unusable> {
    let gc = t.gc.as_ref().ok_or(Unusable::NoDetail)?;
    if gc.ruby_engine != "ruby" {
        return Err(Unusable::NotCRuby(gc.ruby_engine.clone()));
    }
    if t.requests < FEW_REQUESTS {
        return Err(Unusable::TooFewRequests(t.requests));
    }
    let version = ruby_minor(&gc.ruby_version).unwrap_or((0, 0));
    if let Some(why) = rules::nothing_to_gain(t) {
        return Ok(Advice {
            nothing_to_gain: Some(why),
            ..Default::default()
        });
    }
    let mut advice = Advice::default();
    for fired in rules::all(t, gc, version) {
        match fired {
            Ok(p) => advice.proposals.push(p),
            Err(why) => advice.not_for_this_ruby.push(why),
        }
    }
    if advice.proposals.is_empty() && advice.not_for_this_ruby.is_empty() {
        advice.nothing_to_gain = Some(format!(
            "the GC took {} of the time, but no rule fired (docs/TUNING.md)",
            pct(t.gc_time_share.unwrap_or(0.0))
        ));
    }
    Ok(advice)
}

#[cfg(test)]
mod tests;
