//! The samples rbspy wrote, read back and summed: its raw file (gzip of
//! `rbspy02\n`, a header line, then one JSON stack per line) into
//! [`Sample`]s; collapsed stacks, merged or of one pid; the top frames by
//! self and total share; speedscope's JSON. Pure functions of the samples;
//! reads one file, writes none.
//!
//! A frame is named `method - path` without its line: rbspy stamps each
//! sample with the line running then, and a method split over its lines
//! is not the method a flame graph or a top table is asked about.

use super::error::ProfileError;
use super::record::TopFrame;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// One stack of one process at one instant, outermost frame first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub pid: u32,
    pub frames: Vec<String>,
}

#[derive(Deserialize)]
struct RawFrame {
    name: String,
    relative_path: String,
    absolute_path: Option<String>,
}

#[derive(Deserialize)]
struct RawTrace {
    trace: Vec<RawFrame>,
    pid: Option<u32>,
}

/// The samples of rbspy's raw file at `path`.
pub fn read_raw(path: &Path) -> Result<Vec<Sample>, ProfileError> {
    let bad = |why: String| ProfileError::RawFile {
        path: path.display().to_string(),
        why,
    };
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    parse_raw(flate2::read::GzDecoder::new(file)).map_err(bad)
}

/// The samples of a decompressed raw file. A file cut short (rbspy killed
/// mid-write) keeps the samples before the cut.
pub fn parse_raw(r: impl Read) -> Result<Vec<Sample>, String> {
    let mut lines = BufReader::new(r).lines();
    match lines.next() {
        Some(Ok(magic)) if magic == "rbspy02" => {}
        Some(Ok(magic)) => {
            return Err(format!(
                "starts with {magic:?}, not rbspy02 (a raw file of another rbspy version)"
            ))
        }
        _ => return Err("empty".into()),
    }
    let _header = lines.next();
    let mut samples = Vec::new();
    for line in lines {
        let Ok(line) = line else { break };
        let Ok(raw) = serde_json::from_str::<RawTrace>(&line) else {
            break;
        };
        samples.push(Sample {
            pid: raw.pid.unwrap_or(0),
            frames: raw
                .trace
                .iter()
                .rev()
                .map(|f| {
                    let path = f.absolute_path.as_deref().unwrap_or(&f.relative_path);
                    format!("{} - {path}", f.name)
                })
                .collect(),
        });
    }
    Ok(samples)
}

/// Collapsed stacks (`outer;inner N` per line, sorted), of every sample
/// or only those of `pid`.
pub fn collapsed(samples: &[Sample], pid: Option<u32>) -> String {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples.iter().filter(|s| pid.is_none_or(|p| s.pid == p)) {
        // `;` separates frames and a space ends the stack: neither may
        // stand inside a frame's name.
        let stack: Vec<String> = s
            .frames
            .iter()
            .map(|f| f.replace(';', ":").replace(' ', "_"))
            .collect();
        *counts.entry(stack.join(";")).or_default() += 1;
    }
    counts
        .iter()
        .map(|(stack, n)| format!("{stack} {n}\n"))
        .collect()
}

/// The pids the samples came from, in order.
pub fn pids(samples: &[Sample]) -> Vec<u32> {
    samples
        .iter()
        .map(|s| s.pid)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The `limit` frames with the largest self share (then total share, then
/// name): self counts the samples a frame is the innermost of, total those
/// it is anywhere in (once per sample, however deep the recursion).
pub fn top(samples: &[Sample], limit: usize) -> Vec<TopFrame> {
    if samples.is_empty() {
        return Vec::new();
    }
    let mut own: HashMap<&str, u64> = HashMap::new();
    let mut all: HashMap<&str, u64> = HashMap::new();
    for s in samples {
        if let Some(leaf) = s.frames.last() {
            *own.entry(leaf).or_default() += 1;
        }
        let unique: BTreeSet<&str> = s.frames.iter().map(String::as_str).collect();
        for f in unique {
            *all.entry(f).or_default() += 1;
        }
    }
    let n = samples.len() as f64;
    let mut frames: Vec<TopFrame> = all
        .iter()
        .map(|(f, total)| TopFrame {
            frame: f.to_string(),
            self_share: own.get(f).copied().unwrap_or(0) as f64 / n,
            total_share: *total as f64 / n,
        })
        .collect();
    frames.sort_by(|a, b| {
        b.self_share
            .total_cmp(&a.self_share)
            .then(b.total_share.total_cmp(&a.total_share))
            .then(a.frame.cmp(&b.frame))
    });
    frames.truncate(limit);
    frames
}

/// The share of samples in garbage collection, where the stacks mark it
/// (a frame named `(garbage collection)`, as some rbspy versions write);
/// None when no frame does: rbspy 0.55 does not mark GC, and a share of 0
/// would read as a measurement.
pub fn gc_share(samples: &[Sample]) -> Option<f64> {
    let gc = samples
        .iter()
        .filter(|s| {
            s.frames
                .iter()
                .any(|f| f.starts_with("(garbage collection)"))
        })
        .count();
    (gc > 0).then(|| gc as f64 / samples.len() as f64)
}

/// speedscope's file format (its `file-format-schema.json`): one sampled
/// profile of every process merged, then one per pid, over shared frames.
pub fn speedscope(samples: &[Sample], name: &str, rate_hz: u32) -> Value {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut frames = Vec::new();
    let mut stacks: Vec<(u32, Vec<usize>)> = Vec::with_capacity(samples.len());
    for s in samples {
        let stack = s
            .frames
            .iter()
            .map(|f| {
                *index.entry(f).or_insert_with(|| {
                    frames.push(json!({ "name": f }));
                    frames.len() - 1
                })
            })
            .collect();
        stacks.push((s.pid, stack));
    }
    let interval_s = 1.0 / f64::from(rate_hz.max(1));
    let profile = |title: String, pid: Option<u32>| {
        let mine: Vec<&Vec<usize>> = stacks
            .iter()
            .filter(|(p, _)| pid.is_none_or(|want| *p == want))
            .map(|(_, s)| s)
            .collect();
        json!({
            "type": "sampled",
            "name": title,
            "unit": "seconds",
            "startValue": 0.0,
            "endValue": mine.len() as f64 * interval_s,
            "samples": mine,
            "weights": vec![interval_s; mine.len()],
        })
    };
    let mut profiles = vec![profile(format!("{name}: every process"), None)];
    for pid in pids(samples) {
        profiles.push(profile(format!("{name}: pid {pid}"), Some(pid)));
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": name,
        "exporter": "rackbench",
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pid: u32, frames: &[&str]) -> Sample {
        Sample {
            pid,
            frames: frames.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn raw_files_are_read_innermost_last_and_a_cut_file_keeps_what_came_before() {
        let raw = "rbspy02\n{\"sample_rate\":100}\n\
            {\"trace\":[{\"name\":\"b\",\"relative_path\":\"x.rb\",\"absolute_path\":\"/x.rb\",\"lineno\":3},\
            {\"name\":\"a\",\"relative_path\":\"x.rb\",\"absolute_path\":null,\"lineno\":1}],\
            \"pid\":7,\"thread_id\":1,\"time\":null,\"on_cpu\":null}\n\
            {\"trace\":[{\"name\":\"c\",\"rel";
        let cases: &[(&str, Result<Vec<Sample>, ()>)] = &[
            (raw, Ok(vec![s(7, &["a - x.rb", "b - /x.rb"])])),
            ("rbspy02\n{}\n", Ok(vec![])),
            ("rbspy01\n{}\n", Err(())),
            ("", Err(())),
        ];
        for (text, want) in cases {
            let got = parse_raw(text.as_bytes()).map_err(|_| ());
            assert_eq!(&got, want, "{text:?}");
        }
    }

    #[test]
    fn collapsed_stacks_count_each_stack_merged_or_of_one_pid() {
        let samples = [
            s(1, &["main", "a"]),
            s(2, &["main", "a"]),
            s(2, &["main", "b c"]),
        ];
        let cases: &[(Option<u32>, &str)] = &[
            (None, "main;a 2\nmain;b_c 1\n"),
            (Some(2), "main;a 1\nmain;b_c 1\n"),
            (Some(1), "main;a 1\n"),
            (Some(9), ""),
        ];
        for (pid, want) in cases {
            assert_eq!(collapsed(&samples, *pid), *want, "{pid:?}");
        }
    }

    #[test]
    fn top_frames_share_self_and_total_and_count_recursion_once() {
        let samples = [
            s(1, &["main", "a"]),
            s(1, &["main", "a", "a"]),
            s(1, &["main", "b"]),
            s(1, &["main"]),
        ];
        let top = top(&samples, 3);
        let got: Vec<(&str, f64, f64)> = top
            .iter()
            .map(|t| (t.frame.as_str(), t.self_share, t.total_share))
            .collect();
        assert_eq!(
            got,
            // b and main tie on self share; main's larger total wins.
            vec![("a", 0.5, 0.5), ("main", 0.25, 1.0), ("b", 0.25, 0.25)]
        );
        assert!(super::top(&[], 3).is_empty());
    }

    #[test]
    fn gc_share_is_none_unless_the_stacks_mark_gc() {
        let plain = [s(1, &["main"])];
        assert_eq!(gc_share(&plain), None);
        let marked = [s(1, &["main"]), s(1, &["(garbage collection) - gc"])];
        assert_eq!(gc_share(&marked), Some(0.5));
    }

    #[test]
    fn speedscope_holds_every_process_then_each_pid_over_shared_frames() {
        let samples = [s(1, &["main", "a"]), s(2, &["main", "b"])];
        let doc = speedscope(&samples, "puma", 100);
        assert_eq!(doc["shared"]["frames"].as_array().unwrap().len(), 3);
        let profiles = doc["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 3);
        assert_eq!(profiles[0]["samples"], json!([[0, 1], [0, 2]]));
        assert_eq!(profiles[2]["name"], "puma: pid 2");
        assert_eq!(profiles[2]["samples"], json!([[0, 2]]));
        assert_eq!(profiles[1]["weights"], json!([0.01]));
    }
}
