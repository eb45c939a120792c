//! The GC's detail in each flush line (`"gc"`, issue 41): the Ruby, the
//! heap and the limits GC.stat (and GC.stat_heap on 3.2 and later) gave
//! at the flush, and what triggered the GCs since the previous line, as
//! `GC.latest_gc_info` named it after each request during which GC.count
//! moved. [`details`] folds the lines into [`GcDetail`] per process and
//! over all of them, the figures `tune` reads its rules from.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A line's `"gc"` as the middleware writes it. Figures the Ruby's
/// GC.stat lacks are absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GcLine {
    #[serde(default)]
    pub ruby: String,
    #[serde(default)]
    pub engine: String,
    pub heap_live_slots: Option<u64>,
    pub heap_free_slots: Option<u64>,
    pub heap_allocated_pages: Option<u64>,
    pub malloc_increase_bytes: Option<u64>,
    pub malloc_increase_bytes_limit: Option<u64>,
    pub oldmalloc_increase_bytes: Option<u64>,
    pub oldmalloc_increase_bytes_limit: Option<u64>,
    pub old_objects: Option<u64>,
    pub old_objects_limit: Option<u64>,
    pub compact_count: Option<u64>,
    /// Per size pool: slot size, eden slots, objects allocated in it since
    /// the previous line (null on a process's first line).
    #[serde(default)]
    pub heaps: Vec<(u64, u64, Option<u64>)>,
    /// GCs since the previous line by trigger: "minor_by_newobj",
    /// "minor_by_malloc", "major_by_oldgen", "major_by_nofree", ...
    #[serde(default)]
    pub triggers: BTreeMap<String, u64>,
}

/// One size pool of [`GcDetail`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeapPool {
    pub slot_size: u64,
    /// The most eden slots seen at a flush (in one process).
    pub eden_slots: u64,
    /// Objects allocated in the pool over the lines read (all processes).
    pub allocated_objects: u64,
}

/// `telemetry.gc` and `per_worker[].gc`: each heap and limit figure is the
/// most seen at a flush in one process (the GC's settings act per
/// process); triggers and allocations are summed. Field names are a
/// contract: add, never rename.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GcDetail {
    /// RUBY_VERSION and RUBY_ENGINE of the app processes.
    pub ruby_version: String,
    pub ruby_engine: String,
    pub heap_live_slots: Option<u64>,
    pub heap_free_slots: Option<u64>,
    pub heap_allocated_pages: Option<u64>,
    pub malloc_increase_bytes: Option<u64>,
    pub malloc_increase_bytes_limit: Option<u64>,
    pub oldmalloc_increase_bytes: Option<u64>,
    pub oldmalloc_increase_bytes_limit: Option<u64>,
    pub old_objects: Option<u64>,
    pub old_objects_limit: Option<u64>,
    pub compact_count: Option<u64>,
    /// Per size pool, in the pools' order (absent before Ruby 3.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heaps: Vec<HeapPool>,
    /// GCs classified by trigger (a GC between two requests is not).
    pub triggers: BTreeMap<String, u64>,
}

impl GcDetail {
    /// Classified minor GCs, and those of them the malloc limit triggered.
    pub fn minors(&self) -> (u64, u64) {
        let by = |p: &str| -> u64 {
            self.triggers
                .iter()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(_, n)| n)
                .sum()
        };
        (by("minor_by_"), by("minor_by_malloc"))
    }

    /// Classified major GCs by reason ("oldgen", "nofree", ...).
    pub fn majors(&self) -> BTreeMap<String, u64> {
        self.triggers
            .iter()
            .filter_map(|(k, n)| Some((k.strip_prefix("major_by_")?.to_string(), *n)))
            .collect()
    }

    fn add(&mut self, l: &GcLine) {
        if self.ruby_version.is_empty() {
            self.ruby_version = l.ruby.clone();
            self.ruby_engine = l.engine.clone();
        }
        let most = |a: &mut Option<u64>, b: Option<u64>| {
            if let Some(b) = b {
                *a = Some(a.map_or(b, |a| a.max(b)));
            }
        };
        most(&mut self.heap_live_slots, l.heap_live_slots);
        most(&mut self.heap_free_slots, l.heap_free_slots);
        most(&mut self.heap_allocated_pages, l.heap_allocated_pages);
        most(&mut self.malloc_increase_bytes, l.malloc_increase_bytes);
        most(
            &mut self.malloc_increase_bytes_limit,
            l.malloc_increase_bytes_limit,
        );
        most(
            &mut self.oldmalloc_increase_bytes,
            l.oldmalloc_increase_bytes,
        );
        most(
            &mut self.oldmalloc_increase_bytes_limit,
            l.oldmalloc_increase_bytes_limit,
        );
        most(&mut self.old_objects, l.old_objects);
        most(&mut self.old_objects_limit, l.old_objects_limit);
        most(&mut self.compact_count, l.compact_count);
        for (i, &(slot_size, eden, allocated)) in l.heaps.iter().enumerate() {
            if self.heaps.len() <= i {
                self.heaps.push(HeapPool {
                    slot_size,
                    ..Default::default()
                });
            }
            let p = &mut self.heaps[i];
            p.eden_slots = p.eden_slots.max(eden);
            p.allocated_objects += allocated.unwrap_or(0);
        }
        for (k, n) in &l.triggers {
            *self.triggers.entry(k.clone()).or_default() += n;
        }
    }

    /// Another process's detail folded in: the most of each figure, the
    /// sums of triggers and allocations.
    fn fold(&mut self, o: &GcDetail) {
        let as_line = GcLine {
            ruby: o.ruby_version.clone(),
            engine: o.ruby_engine.clone(),
            heap_live_slots: o.heap_live_slots,
            heap_free_slots: o.heap_free_slots,
            heap_allocated_pages: o.heap_allocated_pages,
            malloc_increase_bytes: o.malloc_increase_bytes,
            malloc_increase_bytes_limit: o.malloc_increase_bytes_limit,
            oldmalloc_increase_bytes: o.oldmalloc_increase_bytes,
            oldmalloc_increase_bytes_limit: o.oldmalloc_increase_bytes_limit,
            old_objects: o.old_objects,
            old_objects_limit: o.old_objects_limit,
            compact_count: o.compact_count,
            heaps: o
                .heaps
                .iter()
                .map(|p| (p.slot_size, p.eden_slots, Some(p.allocated_objects)))
                .collect(),
            triggers: o.triggers.clone(),
        };
        self.add(&as_line);
    }
}

/// The detail over all processes and per process (by pid), from the
/// lines that carry one; None overall when none does (an older
/// middleware).
pub fn details<'a>(
    lines: impl IntoIterator<Item = (u32, &'a GcLine)>,
) -> (Option<GcDetail>, BTreeMap<u32, GcDetail>) {
    let mut per: BTreeMap<u32, GcDetail> = BTreeMap::new();
    for (pid, l) in lines {
        per.entry(pid).or_default().add(l);
    }
    let mut all: Option<GcDetail> = None;
    for d in per.values() {
        all.get_or_insert_with(GcDetail::default).fold(d);
    }
    (all, per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(
        live: u64,
        limit: u64,
        heaps: Vec<(u64, u64, Option<u64>)>,
        t: &[(&str, u64)],
    ) -> GcLine {
        GcLine {
            ruby: "3.3.8".into(),
            engine: "ruby".into(),
            heap_live_slots: Some(live),
            malloc_increase_bytes_limit: Some(limit),
            heaps,
            triggers: t.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn figures_are_the_most_one_process_saw_and_triggers_add_up() {
        let a1 = line(
            100,
            16,
            vec![(40, 500, None), (80, 60, None)],
            &[("minor_by_newobj", 3)],
        );
        let a2 = line(
            300,
            32,
            vec![(40, 700, Some(9000)), (80, 50, Some(10))],
            &[("minor_by_malloc", 1), ("major_by_oldgen", 2)],
        );
        let b1 = line(
            200,
            16,
            vec![(40, 650, Some(4000)), (80, 90, Some(5))],
            &[("minor_by_newobj", 4)],
        );
        let (all, per) = details([(1, &a1), (1, &a2), (2, &b1)]);
        let all = all.unwrap();
        assert_eq!(per[&1].heap_live_slots, Some(300));
        assert_eq!(per[&2].heap_live_slots, Some(200));
        assert_eq!(all.heap_live_slots, Some(300));
        assert_eq!(all.malloc_increase_bytes_limit, Some(32));
        assert_eq!(all.heap_free_slots, None);
        assert_eq!(all.ruby_version, "3.3.8");
        assert_eq!(
            all.heaps[0],
            HeapPool {
                slot_size: 40,
                eden_slots: 700,
                allocated_objects: 13000
            }
        );
        assert_eq!(all.heaps[1].eden_slots, 90);
        assert_eq!(all.minors(), (8, 1));
        assert_eq!(all.majors(), BTreeMap::from([("oldgen".to_string(), 2)]));
    }

    #[test]
    fn no_line_with_a_gc_is_no_detail() {
        let (all, per) = details(std::iter::empty());
        assert!(all.is_none() && per.is_empty());
    }
}
