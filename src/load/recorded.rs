//! Recorded requests grouped into the endpoints of a mix to be written
//! (`rackbench mix`, with `mixgen`, which reads the sources and writes
//! the file).
//!
//! Requests are tallied into endpoints by method and path shape as they
//! are read ([`Traffic::add`]), so memory grows with the shapes kept,
//! never with the log's length. A path segment's id part becomes a slot
//! whatever format follows it (`123.json` is `{random:MIN..MAX}.json`,
//! and the format stays in the endpoint's name, `posts_id_json`): a
//! number is ranged over the values seen (one value seen stays that
//! value); a UUID, a hex id, a slug with a number (`123-hello-world`)
//! or a date cannot be ranged, so it is drawn from the values seen
//! (`{one_of:..}`, the [`MAX_VALUES`] smallest, so any order of the same
//! traffic keeps the same ones). A query value that is a number is
//! ranged; other query values take the most common one. Each endpoint's
//! weight is its observed count, so a mix drawn by weight reproduces the
//! recorded proportions. Past `max_endpoints` shapes, the rarer ones are
//! folded into the nearest kept one (same method, longest common path
//! prefix) and the file says how many. Names are made of the path,
//! unique, and never depend on the order requests arrived in.
//!
//! This module only counts what it is handed: it never reads a file,
//! writes the mix file or sends a request.

use super::schedule::Entry;
use std::collections::{BTreeMap, BTreeSet};

/// Endpoints a generated mix holds unless told otherwise.
pub const DEFAULT_MAX_ENDPOINTS: usize = 20;

/// The most values a slot that cannot be ranged keeps and draws from
/// (the smallest seen): enough to spread the load over a thousand rows,
/// and a path that stays under 40 KB with UUIDs.
pub const MAX_VALUES: usize = 1000;

/// The longest endpoint name written (the mix format has no limit; a
/// report's table does).
const MAX_NAME: usize = 40;

/// Recorded traffic, tallied by shape as it is read.
#[derive(Debug, Clone)]
pub struct Traffic {
    /// "the record r.jsonl", "the nginx log access.log".
    pub source: String,
    /// Requests tallied.
    pub requests: u64,
    groups: BTreeMap<Shape, Group>,
}

impl Traffic {
    /// No requests yet, from `source`.
    pub fn new(source: String) -> Traffic {
        Traffic {
            source,
            requests: 0,
            groups: BTreeMap::new(),
        }
    }

    /// Tallies one request into its shape's endpoint; the request itself
    /// is not kept.
    pub fn add(&mut self, r: &Entry) {
        let (shape, values) = shape_of(r);
        self.requests += 1;
        match self.groups.get_mut(&shape) {
            Some(g) => g.add(r, values),
            None => {
                let mut g = Group::new(shape.clone(), r, &values);
                g.add(r, values);
                self.groups.insert(shape, g);
            }
        }
    }
}

/// An id that cannot be ranged, drawn from the values seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum IdKind {
    Uuid,
    Hex,
    /// A number with words after it: `123-hello-world`.
    Slug,
    /// `2026-11-28`.
    Date,
}

/// A part of a path or a query value: as written, a number slot, an id
/// drawn from the values seen (each with the format after it, `.json`
/// or empty), or a free query value (written as the most common one).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Lit(String),
    Num { ext: String },
    Pick { kind: IdKind, ext: String },
    Free,
}

/// What requests of one endpoint share: method, path parts, query keys
/// (each with a number slot, a free value or none).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    method: String,
    path: Vec<Part>,
    /// (key, None when it has no `=`).
    query: Vec<(String, Option<Part>)>,
}

/// One request's value for a slot of its shape.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Num(u64),
    Id(String),
    Free(String),
}

/// A number up to 18 digits (so it fits a u64 and a TOML integer).
fn number(s: &str) -> Option<u64> {
    (!s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// A segment cut into its id part and the format after it:
/// `("123", ".json")`; the format is 1 to 8 letters or digits.
fn split_format(s: &str) -> (&str, &str) {
    match s.rfind('.') {
        Some(i)
            if i > 0
                && (2..=9).contains(&(s.len() - i))
                && s[i + 1..].bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (&s[..i], &s[i..])
        }
        _ => (s, ""),
    }
}

/// What kind of id `s` is, when it is one that cannot be ranged: a UUID,
/// a hex id (7 or more hex digits with both digits and letters, or 16 or
/// more), a slug with a number (`123-hello-world`), a date (`2026-11-28`).
fn id_kind(s: &str) -> Option<IdKind> {
    let b = s.as_bytes();
    let hex = |c: &u8| c.is_ascii_hexdigit();
    let digit = |c: &u8| c.is_ascii_digit();
    let dashes = [8, 13, 18, 23];
    if b.len() == 36
        && b.iter().enumerate().all(|(i, c)| {
            if dashes.contains(&i) {
                *c == b'-'
            } else {
                hex(c)
            }
        })
    {
        return Some(IdKind::Uuid);
    }
    if b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                digit(c)
            }
        })
    {
        return Some(IdKind::Date);
    }
    if b.len() >= 7
        && b.iter().all(hex)
        && b.iter().any(digit)
        && (b.len() >= 16 || b.iter().any(u8::is_ascii_alphabetic))
    {
        return Some(IdKind::Hex);
    }
    let lead = b.iter().take_while(|c| digit(c)).count();
    let words = &b[lead..];
    if lead > 0
        && words.len() > 1
        && words[0] == b'-'
        && words
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
        && words.iter().any(u8::is_ascii_alphabetic)
    {
        return Some(IdKind::Slug);
    }
    None
}

/// A path segment (or, with `query`, a query value) as a part of a
/// shape, with its slot's value when it has one.
fn classify(s: &str, query: bool) -> (Part, Option<Value>) {
    let (stem, ext) = split_format(s);
    for (stem, ext) in [(stem, ext), (s, "")] {
        if let Some(n) = number(stem) {
            let ext = ext.to_string();
            return (Part::Num { ext }, Some(Value::Num(n)));
        }
        if let Some(kind) = id_kind(stem) {
            let ext = ext.to_string();
            return (Part::Pick { kind, ext }, Some(Value::Id(stem.to_string())));
        }
    }
    if query {
        (Part::Free, Some(Value::Free(s.to_string())))
    } else {
        (Part::Lit(s.to_string()), None)
    }
}

/// A request's shape, and the values of its slots in order.
fn shape_of(r: &Entry) -> (Shape, Vec<Value>) {
    let (path, query) = r.target.split_once('?').unwrap_or((&r.target, ""));
    let mut values = Vec::new();
    let mut part = |s: &str, query: bool| {
        let (p, v) = classify(s, query);
        values.extend(v);
        p
    };
    let path = path.split('/').skip(1).map(|s| part(s, false)).collect();
    let query = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(part(v, true))),
            None => (kv.to_string(), None),
        })
        .collect();
    let method = r.method.to_ascii_uppercase();
    (
        Shape {
            method,
            path,
            query,
        },
        values,
    )
}

/// What one slot of an endpoint has seen.
#[derive(Debug, Clone)]
enum Slot {
    /// (min, max) of the numbers.
    Range(u64, u64),
    /// The smallest [`MAX_VALUES`] ids, and whether there were more.
    Values { kept: BTreeSet<String>, more: bool },
    /// How often each free query value was seen.
    Free(BTreeMap<String, u64>),
}

impl Slot {
    fn add(&mut self, v: Value) {
        match (self, v) {
            (Slot::Range(lo, hi), Value::Num(n)) => (*lo, *hi) = ((*lo).min(n), (*hi).max(n)),
            (Slot::Values { kept, more }, Value::Id(v)) => {
                if kept.insert(v) && kept.len() > MAX_VALUES {
                    kept.pop_last();
                    *more = true;
                }
            }
            (Slot::Free(seen), Value::Free(v)) => *seen.entry(v).or_default() += 1,
            _ => unreachable!("a shape's slots keep their kind"),
        }
    }

    /// The slot as written in a path, before its format.
    fn template(&self) -> String {
        match self {
            Slot::Range(lo, hi) if lo == hi => lo.to_string(),
            Slot::Range(lo, hi) => format!("{{random:{lo}..{hi}}}"),
            Slot::Values { kept, .. } if kept.len() == 1 => {
                literal(kept.first().expect("one value"))
            }
            Slot::Values { kept, .. } => format!(
                "{{one_of:{}}}",
                kept.iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join("|")
            ),
            Slot::Free(seen) => most_common(seen).map_or_else(String::new, |v| literal(&v)),
        }
    }
}

/// One endpoint being gathered.
#[derive(Debug, Clone)]
struct Group {
    shape: Shape,
    count: u64,
    /// One per slot of the shape, in order.
    slots: Vec<Slot>,
    statuses: BTreeMap<u16, u64>,
    content_types: BTreeMap<String, u64>,
    /// The first body seen, when any request had one.
    body: Option<Vec<u8>>,
    /// The target when only one request had this shape.
    first_target: String,
    /// Shapes folded into this one past the cap: (method and path, count).
    folded: Vec<(String, u64)>,
}

impl Group {
    /// An empty group of `shape`, its slots made for `values`' kinds.
    fn new(shape: Shape, r: &Entry, values: &[Value]) -> Group {
        let slots = values
            .iter()
            .map(|v| match v {
                Value::Num(n) => Slot::Range(*n, *n),
                Value::Id(_) => Slot::Values {
                    kept: BTreeSet::new(),
                    more: false,
                },
                Value::Free(_) => Slot::Free(BTreeMap::new()),
            })
            .collect();
        Group {
            shape,
            count: 0,
            slots,
            statuses: BTreeMap::new(),
            content_types: BTreeMap::new(),
            body: None,
            first_target: r.target.clone(),
            folded: Vec::new(),
        }
    }

    fn add(&mut self, r: &Entry, values: Vec<Value>) {
        self.count += 1;
        for (slot, v) in self.slots.iter_mut().zip(values) {
            slot.add(v);
        }
        if let Some(s) = r.status {
            *self.statuses.entry(s).or_default() += 1;
        }
        if !r.body.is_empty() {
            self.body.get_or_insert_with(|| r.body.clone());
            if let Some((_, ct)) = r
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                *self.content_types.entry(ct.clone()).or_default() += 1;
            }
        }
    }

    /// The path template: number slots as `{random:MIN..MAX}` (or the one
    /// value seen), ids as `{one_of:..}` over the values seen, each with
    /// its format; free values as the most common one.
    fn path(&self) -> String {
        if self.count == 1 && self.folded.is_empty() {
            return literal(&self.first_target);
        }
        let mut slots = self.slots.iter();
        let mut slot = |p: &Part| match p {
            Part::Num { ext } | Part::Pick { ext, .. } => {
                slots.next().expect("a slot per part").template() + &literal(ext)
            }
            Part::Free => slots.next().expect("a slot per part").template(),
            Part::Lit(s) => literal(s),
        };
        let mut out = String::new();
        for p in &self.shape.path {
            out.push('/');
            out.push_str(&slot(p));
        }
        if out.is_empty() {
            out.push('/');
        }
        for (i, (k, v)) in self.shape.query.iter().enumerate() {
            out.push(if i == 0 { '?' } else { '&' });
            out.push_str(&literal(k));
            if let Some(v) = v {
                out.push('=');
                out.push_str(&slot(v));
            }
        }
        out
    }

    /// Ids drawn from the values seen that had more values than kept.
    fn values_cut(&self) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s, Slot::Values { more: true, .. }))
    }

    /// The method and path shape, as the header comment names it:
    /// `GET /posts/N.json`, `GET /users/UUID`.
    fn label(&self) -> String {
        let mut s = format!("{} ", self.shape.method);
        for p in &self.shape.path {
            s.push('/');
            match p {
                Part::Lit(l) => s.push_str(l),
                Part::Num { ext } => s.push_str(&format!("N{ext}")),
                Part::Pick { kind, ext } => {
                    s.push_str(&format!("{}{ext}", kind.word().to_ascii_uppercase()))
                }
                Part::Free => s.push('N'),
            }
        }
        if self.shape.path.is_empty() {
            s.push('/');
        }
        s
    }
}

impl IdKind {
    /// The word for it in names and labels.
    fn word(self) -> &'static str {
        match self {
            IdKind::Uuid => "uuid",
            IdKind::Hex => "hex",
            IdKind::Slug => "slug",
            IdKind::Date => "date",
        }
    }
}

/// The most common key; ties go to the smallest.
fn most_common<K: Clone + Ord>(seen: &BTreeMap<K, u64>) -> Option<K> {
    let max = seen.values().max()?;
    seen.iter().find(|(_, n)| *n == max).map(|(k, _)| k.clone())
}

/// Braces written as `%7B`/`%7D`, so no recorded text reads as a placeholder.
fn literal(s: &str) -> String {
    s.replace('{', "%7B").replace('}', "%7D")
}

/// One endpoint of the mix to be written: a shape of recorded traffic,
/// how often it was seen and what it was answered. (The engine reads the
/// written file back as [`super::mix::MixEndpoint`]s.)
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEndpoint {
    pub name: String,
    pub method: String,
    pub path: String,
    /// Requests of this shape seen (with those folded into it).
    pub weight: u64,
    /// The most common status seen, when the source has statuses.
    pub expect_status: Option<u16>,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// A body seen that is not UTF-8 text, so not written.
    pub body_left_out: bool,
    /// Shapes folded into it past the cap: (method and path, count).
    pub folded: Vec<(String, u64)>,
    /// An id drawn from the values seen had more than [`MAX_VALUES`]: the
    /// smallest are kept.
    pub values_cut: bool,
}

/// Groups `traffic` into at most `max_endpoints` endpoints, the most
/// requested first (ties by shape, so the same input gives the same file).
pub fn endpoints(traffic: &Traffic, max_endpoints: usize) -> Vec<RecordedEndpoint> {
    let mut groups: Vec<Group> = traffic.groups.values().cloned().collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.shape.cmp(&b.shape)));
    let keep = max_endpoints.max(1).min(groups.len());
    let rest = groups.split_off(keep);
    for g in rest {
        let i = nearest(&groups, &g.shape);
        let into = &mut groups[i];
        into.count += g.count;
        into.folded.push((g.label(), g.count));
        for (s, n) in g.statuses {
            *into.statuses.entry(s).or_default() += n;
        }
    }
    let mut names: Vec<String> = Vec::new();
    groups
        .iter()
        .map(|g| {
            let name = unique_name(&g.shape, &names);
            names.push(name.clone());
            let text = g.body.as_ref().map(|b| String::from_utf8(b.clone()));
            let body = text.clone().and_then(Result::ok);
            let headers = match (&body, most_common(&g.content_types)) {
                (Some(_), Some(ct)) => vec![("Content-Type".to_string(), ct)],
                _ => Vec::new(),
            };
            RecordedEndpoint {
                name,
                method: g.shape.method.clone(),
                path: g.path(),
                weight: g.count,
                expect_status: most_common(&g.statuses),
                headers,
                body,
                body_left_out: matches!(text, Some(Err(_))),
                folded: g.folded.clone(),
                values_cut: g.values_cut(),
            }
        })
        .collect()
}

/// The kept group nearest `shape`: the same method with the longest
/// common path prefix (the most requested among equals), else the most
/// requested of all.
fn nearest(kept: &[Group], shape: &Shape) -> usize {
    let common = |g: &Group| {
        g.shape
            .path
            .iter()
            .zip(&shape.path)
            .take_while(|(a, b)| a == b)
            .count()
    };
    kept.iter()
        .enumerate()
        .filter(|(_, g)| g.shape.method == shape.method)
        .max_by(|(i, a), (j, b)| common(a).cmp(&common(b)).then(j.cmp(i)))
        .map_or(0, |(i, _)| i)
}

/// A name from the path: literal segments, `id` for a number or an id
/// (`date` for a date), with its format (`id_json`), joined by `_`; the method first unless GET; `root` for `/`. A name taken
/// already gets its query keys, then a number.
fn unique_name(shape: &Shape, taken: &[String]) -> String {
    let mut words: Vec<String> = Vec::new();
    if shape.method != "GET" {
        words.push(shape.method.to_ascii_lowercase());
    }
    for p in &shape.path {
        match p {
            Part::Lit(s) => words.push(s.clone()),
            Part::Num { ext } | Part::Pick { ext, .. } => {
                let id = match p {
                    Part::Pick {
                        kind: IdKind::Date, ..
                    } => "date",
                    _ => "id",
                };
                words.push(format!("{id}{ext}"));
            }
            Part::Free => words.push("id".into()),
        }
    }
    let base = clean(&words.join("_"));
    let base = if base.is_empty() || base == clean(&shape.method.to_ascii_lowercase()) {
        clean(&format!("{} root", words.join("_")))
    } else {
        base
    };
    let with_query = clean(&format!(
        "{base}_{}",
        shape
            .query
            .iter()
            .map(|q| q.0.as_str())
            .collect::<Vec<_>>()
            .join("_")
    ));
    let free = |n: &String| !taken.contains(n);
    [base.clone(), with_query]
        .into_iter()
        .find(free)
        .or_else(|| (2..).map(|i| format!("{base}_{i}")).find(free))
        .expect("a free name")
}

/// Lower case, `[a-z0-9_-]` only (anything else a `_`), no repeated or
/// trailing `_`, at most [`MAX_NAME`] characters.
fn clean(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && (out.is_empty() || out.ends_with('_'))) {
            out.push(c);
        }
    }
    out.truncate(MAX_NAME);
    out.trim_end_matches('_').to_string()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::load) fn get(target: &str, status: Option<u16>) -> Entry {
        Entry {
            t_us: 0,
            method: "GET".into(),
            target: target.into(),
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub(in crate::load) fn traffic(requests: Vec<Entry>) -> Traffic {
        let mut t = Traffic::new("the test".into());
        for r in &requests {
            t.add(r);
        }
        t
    }

    /// The endpoints' (name, method, path, weight).
    fn summary(t: &Traffic, max: usize) -> Vec<(String, String, String, u64)> {
        endpoints(t, max)
            .into_iter()
            .map(|e| (e.name, e.method, e.path, e.weight))
            .collect()
    }

    #[test]
    fn numbers_become_ranges_and_a_shape_seen_once_stays_literal() {
        let mut reqs = Vec::new();
        for id in [3, 17, 120] {
            reqs.push(get(&format!("/posts/{id}"), Some(200)));
        }
        reqs.push(get("/posts/9/comments?page=2&q=ruby", Some(200)));
        reqs.push(get("/search?q=ruby&page=1", Some(200)));
        reqs.push(get("/search?q=rails&page=4", Some(200)));
        reqs.push(get("/search?q=ruby&page=2", Some(404)));
        reqs.push(get("/", Some(200)));
        reqs.push(get("/", Some(200)));
        let s = summary(&traffic(reqs), 20);
        let want = [
            ("posts_id", "/posts/{random:3..120}", 3),
            ("search", "/search?q=ruby&page={random:1..4}", 3),
            ("root", "/", 2),
            ("posts_id_comments", "/posts/9/comments?page=2&q=ruby", 1),
        ];
        assert_eq!(s.len(), want.len(), "{s:?}");
        for (got, (name, path, weight)) in s.iter().zip(want) {
            assert_eq!(
                (got.0.as_str(), got.2.as_str(), got.3),
                (name, path, weight)
            );
        }
    }

    /// (case, targets, the names given)
    #[test]
    fn names_are_unique_and_made_of_the_path() {
        type Row = (
            &'static str,
            Vec<(&'static str, &'static str)>,
            Vec<&'static str>,
        );
        let rows: Vec<Row> = vec![
            (
                "method first unless GET",
                vec![("POST", "/posts/1/comments"), ("GET", "/posts/1/comments")],
                vec!["post_posts_id_comments", "posts_id_comments"],
            ),
            (
                "a clash takes the query keys, then a number",
                vec![("GET", "/a"), ("GET", "/a?x=1"), ("GET", "/a?x=y&z")],
                vec!["a", "a_x", "a_x_z"],
            ),
            (
                "a clash with no query gets a number",
                vec![("GET", "/A.json"), ("GET", "/a_json")],
                vec!["a_json", "a_json_2"],
            ),
            (
                "characters outside [a-z0-9_-] and the root",
                vec![("GET", "/Über/Straße%20x"), ("DELETE", "/")],
                vec!["ber_stra_e_20x", "delete_root"],
            ),
        ];
        for (case, reqs, names) in rows {
            let t = traffic(
                reqs.iter()
                    .map(|(m, p)| Entry {
                        method: m.to_string(),
                        ..get(p, None)
                    })
                    .collect(),
            );
            let got: Vec<String> = endpoints(&t, 20).into_iter().map(|e| e.name).collect();
            let mut sorted = got.clone();
            sorted.sort();
            let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(sorted, want, "{case}");
            for n in got {
                assert!(
                    n.bytes().all(|b| b.is_ascii_lowercase()
                        || b.is_ascii_digit()
                        || b == b'_'
                        || b == b'-'),
                    "{case}: {n}"
                );
            }
        }
    }

    #[test]
    fn the_cap_folds_rarer_shapes_into_the_nearest_and_keeps_the_total() {
        let mut reqs = Vec::new();
        for (target, n) in [
            ("/posts/1", 50),
            ("/authors/2", 30),
            ("/posts/1/edit", 2),
            ("/about", 1),
        ] {
            reqs.extend((0..n).map(|_| get(target, None)));
        }
        let e = endpoints(&traffic(reqs), 2);
        assert_eq!(e.len(), 2);
        assert_eq!(e.iter().map(|e| e.weight).sum::<u64>(), 83, "nothing lost");
        assert_eq!(e[0].name, "posts_id");
        assert_eq!(
            e[0].folded,
            vec![
                ("GET /posts/N/edit".to_string(), 2),
                ("GET /about".to_string(), 1)
            ],
            "/posts/N/edit is nearest /posts/N; /about shares no prefix with either: the most requested"
        );
        assert_eq!((e[0].weight, e[1].weight), (53, 30));
    }

    /// (segment, the part it is, written as its label piece)
    #[test]
    fn ids_are_recognised_whatever_format_follows_them() {
        let rows = [
            ("123", "N"),
            ("123.json", "N.json"),
            ("2726.JSON", "N.JSON"),
            ("0b8f3c2e-4e1c-4b6a-9d3e-1a2b3c4d5e6f", "UUID"),
            ("0B8F3C2E-4E1C-4B6A-9D3E-1A2B3C4D5E6F.xml", "UUID.xml"),
            ("da39a3ee5e6b4b0d3255bfef95601890afd80709", "HEX"),
            ("5e6b4b0.js", "HEX.js"),
            ("123-hello-world", "SLUG"),
            ("123-hello-world.json", "SLUG.json"),
            ("2026-11-28", "DATE"),
            ("2026-11-28.csv", "DATE.csv"),
            // Not ids: words, a word with a format, a hex-looking word,
            // a number after words, a version.
            ("posts", "posts"),
            ("index.html", "index.html"),
            ("deadbeef", "deadbeef"),
            ("hello-123", "hello-123"),
            ("v1.2", "v1.2"),
            ("1234567890123456789", "HEX"),
            ("12-34", "12-34"),
        ];
        for (segment, want) in rows {
            let g = Group::new(
                shape_of(&get(&format!("/{segment}"), None)).0,
                &get("/", None),
                &[],
            );
            assert_eq!(g.label(), format!("GET /{want}"), "{segment}");
        }
    }

    #[test]
    fn braces_in_a_recorded_path_are_never_a_placeholder() {
        let e = endpoints(&traffic(vec![get("/a/{x}", None)]), 20);
        assert_eq!(e[0].path, "/a/%7Bx%7D");
    }
}
