//! An A/A run (`rackbench run --aa`): the plan turned into an A/A run (the control's
//! trials twice, as two variants) and, after it, the two compared as the
//! machine's noise floor.
//!
//! It runs no trial itself, and a failed comparison loses no result.

use super::super::sink::Sink;
use crate::plan::Plan;

/// The two variants of an A/A run, and the seed of their comparison's
/// resampling (compare's default).
pub struct Aa {
    pub first: String,
    pub second: String,
    pub seed: u64,
}

/// Turn the plan into an A/A run: only the control's trials, each twice,
/// as variants `CONTROL-aa1` and `CONTROL-aa2` (interleaved by the usual
/// shuffle within each round of repeats). Break-point searches are left
/// out: A/A is about the fixed-load trials. Returns the two labels.
pub(super) fn aa_variants(
    plan: &mut Plan,
    expanded: &mut crate::plan::Expanded,
    control: Option<&str>,
) -> Result<(String, String), String> {
    let variants: Vec<String> = expanded.trials.iter().fold(Vec::new(), |mut v, t| {
        if !v.contains(&t.variant) {
            v.push(t.variant.clone());
        }
        v
    });
    let control = match control {
        Some(c) if variants.iter().any(|v| v == c) => c.to_string(),
        Some(c) => {
            return Err(format!(
                "--control {c}: the plan has no such variant here; it has: {}",
                variants.join(", ")
            ))
        }
        None => variants.first().cloned().ok_or_else(|| {
            "--aa: the plan has no trial to run here (see `rackbench servers`)".to_string()
        })?,
    };
    if plan.breakpoint.as_ref().is_some_and(|b| !b.and_fixed_loads) {
        return Err("--aa compares fixed-load trials, and this plan only searches break points: set and_fixed_loads = true in its [breakpoint] section".into());
    }
    plan.breakpoint = None;
    let labels = (format!("{control}-aa1"), format!("{control}-aa2"));
    let prefix_len = crate::plan::slug(&control).len();
    let mut trials = Vec::new();
    for t in expanded.trials.iter().filter(|t| t.variant == control) {
        for label in [&labels.0, &labels.1] {
            let mut copy = t.clone();
            copy.group = format!("{}{}", crate::plan::slug(label), &t.group[prefix_len..]);
            copy.id = format!("{}{}", crate::plan::slug(label), &t.id[prefix_len..]);
            copy.variant = label.clone();
            trials.push(copy);
        }
    }
    expanded.trials = trials;
    Ok(labels)
}

/// Compare the two A/A variants, say the result and keep it as
/// compare.json (the HTML report shows it). A failure here loses no result.
pub(super) fn aa_compare(out: &std::path::Path, aa: &Aa, primary: Option<&str>, sink: &dyn Sink) {
    let (first, second) = (&aa.first, &aa.second);
    let side = |v: &str| crate::stats::compare::Side {
        dir: out.to_path_buf(),
        selector: Some(format!("variant={v}")),
    };
    match crate::store::samples::compare(&side(first), &side(second), aa.seed, primary) {
        Ok((c, warnings)) => {
            for w in warnings {
                sink.note(&format!("warning: {w}"));
            }
            sink.out(&format!(
                "\nA/A comparison (noise floor of this machine):\n{}\n",
                crate::report::compare::terminal(&c)
            ));
            let path = out.join("compare.json");
            match serde_json::to_string_pretty(&c) {
                Ok(text) => {
                    if let Err(e) = std::fs::write(&path, text + "\n") {
                        sink.note(&format!("warning: cannot write {}: {e}", path.display()));
                    }
                }
                Err(e) => sink.note(&format!("warning: cannot encode the comparison: {e}")),
            }
        }
        Err(e) => sink.note(&format!(
            "warning: no A/A comparison ({e}); try `rackbench compare {0}:variant={first} {0}:variant={second}`",
            out.display()
        )),
    }
}
