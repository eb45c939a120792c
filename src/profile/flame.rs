//! Flame graphs and the difference between two profiles, drawn from the
//! collapsed stacks a profile wrote (`outer;inner COUNT` lines): an SVG
//! per profile (a frame's width its share of the samples, the outermost
//! frame at the bottom, siblings in name order as flamegraph.pl lays them
//! out), a differential SVG (B's widths, each frame coloured by how its
//! share moved from A: red grew, blue shrank), and the frames whose share
//! moved most, in points and in CPU per request (so a frame that keeps
//! its share of a slower server is told apart from one that grew).
//!
//! Pure functions of text: the report embeds the SVGs offline; nothing
//! here reads or writes a file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The stacks of a collapsed file and their counts; lines that are not
/// `STACK COUNT` are skipped.
pub fn parse_collapsed(text: &str) -> BTreeMap<Vec<String>, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(n) = n.trim().parse::<u64>() else {
            continue;
        };
        let frames: Vec<String> = stack.split(';').map(str::to_string).collect();
        *out.entry(frames).or_default() += n;
    }
    out
}

/// A frame in the call tree: its samples (itself and below) and callees.
#[derive(Debug, Default)]
struct Node {
    count: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn of(stacks: &BTreeMap<Vec<String>, u64>) -> Node {
        let mut root = Node::default();
        for (stack, &n) in stacks {
            root.count += n;
            let mut at = &mut root;
            for f in stack {
                at = at.children.entry(f.clone()).or_default();
                at.count += n;
            }
        }
        root
    }

    fn depth(&self) -> usize {
        1 + self.children.values().map(Node::depth).max().unwrap_or(0)
    }

    /// The node at `path` below this one.
    fn at(&self, path: &[String]) -> Option<&Node> {
        let mut at = self;
        for f in path {
            at = at.children.get(f)?;
        }
        Some(at)
    }
}

const ROW: f64 = 17.0;
const FONT: f64 = 11.0;
/// About how wide a character of the label font is.
const CHAR: f64 = 6.3;
/// Frames narrower than this many pixels are not drawn.
const MIN_WIDTH: f64 = 0.5;

/// How a frame is coloured.
enum Colour<'a> {
    /// By its name: a warm hue, the same name the same colour.
    Name,
    /// By the change of its share from A's tree (B's share − A's, in
    /// points), scaled by the largest change.
    Change { a: &'a Node, scale: f64 },
}

/// The flame graph of `collapsed` as a self-contained SVG `width` pixels
/// wide; `title` above it. No samples: a one-line SVG saying so.
pub fn svg(collapsed: &str, title: &str, width: u32) -> String {
    let root = Node::of(&parse_collapsed(collapsed));
    draw(&root, title, width, &Colour::Name)
}

/// B's flame graph coloured by how each frame's share moved from A's
/// (the same path in A's tree; a path A lacks grew from 0).
pub fn diff_svg(a_collapsed: &str, b_collapsed: &str, title: &str, width: u32) -> String {
    let a = Node::of(&parse_collapsed(a_collapsed));
    let b = Node::of(&parse_collapsed(b_collapsed));
    let mut largest: f64 = 0.0;
    each_path(&b, &mut Vec::new(), &mut |path, node| {
        largest = largest.max(path_change(&a, b.count, path, node).abs());
    });
    let colour = Colour::Change {
        a: &a,
        scale: largest.max(1e-9),
    };
    draw(&b, title, width, &colour)
}

fn each_path(node: &Node, path: &mut Vec<String>, f: &mut impl FnMut(&[String], &Node)) {
    for (name, child) in &node.children {
        path.push(name.clone());
        f(path, child);
        each_path(child, path, f);
        path.pop();
    }
}

/// B's share of a path (`node`, of B's `b_total` samples) minus A's, in
/// points of each tree's samples.
fn path_change(a: &Node, b_total: u64, path: &[String], node: &Node) -> f64 {
    let share_b = node.count as f64 / b_total.max(1) as f64;
    let share_a = a
        .at(path)
        .map_or(0.0, |n| n.count as f64 / a.count.max(1) as f64);
    (share_b - share_a) * 100.0
}

fn draw(root: &Node, title: &str, width: u32, colour: &Colour) -> String {
    let w = f64::from(width);
    let mut s = String::new();
    if root.count == 0 {
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="24" class="flame"><text x="4" y="16" font-size="12">{}: no samples</text></svg>"#,
            escape(title)
        );
        return s;
    }
    let depth = root.depth() - 1;
    let height = (depth as f64 + 2.0) * ROW + 8.0;
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" class="flame" font-family="monospace" font-size="{FONT}"><text x="4" y="14" font-size="12">{} ({} samples)</text>"#,
        escape(title),
        root.count
    );
    let bottom = height - ROW - 4.0;
    let mut path = Vec::new();
    frames(root, root.count, 0.0, w, bottom, &mut path, colour, &mut s);
    s.push_str("</svg>");
    s
}

/// Draws the children of `node` from `x`, `width` pixels for its `count`
/// samples, one row above `y`.
#[allow(clippy::too_many_arguments)]
fn frames(
    node: &Node,
    total: u64,
    x: f64,
    width: f64,
    y: f64,
    path: &mut Vec<String>,
    colour: &Colour,
    s: &mut String,
) {
    let per_sample = width / node.count.max(1) as f64;
    let mut at = x;
    for (name, child) in &node.children {
        let w = child.count as f64 * per_sample;
        path.push(name.clone());
        if w >= MIN_WIDTH {
            let share = child.count as f64 / total as f64 * 100.0;
            let (fill, change) = match colour {
                Colour::Name => (name_colour(name), String::new()),
                Colour::Change { a, scale } => {
                    let d = path_change(a, total, path, child);
                    (
                        change_colour(d / scale),
                        format!(", {d:+.1} points against A"),
                    )
                }
            };
            let _ = write!(
                s,
                r#"<g><title>{} ({} samples, {share:.1}%{change})</title><rect x="{at:.2}" y="{y:.1}" width="{w:.2}" height="{:.1}" fill="{fill}" rx="1"/>"#,
                escape(name),
                child.count,
                ROW - 1.0
            );
            let fits = ((w - 6.0) / CHAR).floor();
            if fits >= 3.0 {
                let label = truncate(name, fits as usize);
                let _ = write!(
                    s,
                    r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
                    at + 3.0,
                    y + ROW - 5.0,
                    escape(&label)
                );
            }
            s.push_str("</g>");
            frames(child, total, at, w, y - ROW, path, colour, s);
        }
        path.pop();
        at += w;
    }
}

fn truncate(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        return name.to_string();
    }
    let mut t: String = name.chars().take(chars.saturating_sub(2)).collect();
    t.push_str("..");
    t
}

/// A warm colour from the name's hash: red to yellow, as flame graphs are.
fn name_colour(name: &str) -> String {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let r = 205 + (h % 50);
    let g = 80 + ((h >> 8) % 150);
    let b = 40 + ((h >> 16) % 40);
    format!("rgb({r},{g},{b})")
}

/// Red for a share that grew, blue for one that shrank, white for none;
/// `t` in -1..=1.
fn change_colour(t: f64) -> String {
    let t = t.clamp(-1.0, 1.0);
    let fade = |t: f64| (255.0 - 175.0 * t.abs()).round() as u8;
    if t >= 0.0 {
        format!("rgb(255,{0},{0})", fade(t))
    } else {
        format!("rgb({0},{0},255)", fade(t))
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How one frame's share moved from A to B.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrameChange {
    pub frame: String,
    /// Of the samples the frame is anywhere in (once per sample), 0..1.
    pub total_share_a: f64,
    pub total_share_b: f64,
    /// B − A of the total share, in points.
    pub change_points: f64,
    /// Of the samples the frame is the innermost of (its own code), 0..1.
    pub self_share_a: f64,
    pub self_share_b: f64,
    /// B − A of the self share, in points.
    pub self_change_points: f64,
    /// Its own CPU per request on each side (ms): its self share × the
    /// side's server CPU per request (None where a side's is not known).
    pub cpu_ms_per_request_a: Option<f64>,
    pub cpu_ms_per_request_b: Option<f64>,
}

impl FrameChange {
    /// The frame as the record's `top` names it (`spend_b - /app.ru`):
    /// collapsed stacks spell it with `_` for spaces (`spend_b_-_/app.ru`).
    pub fn readable(&self) -> String {
        self.frame.replace("_-_", " - ")
    }

    /// B − A of its own CPU per request (ms), when both sides know theirs.
    pub fn cpu_change_ms(&self) -> Option<f64> {
        Some(self.cpu_ms_per_request_b? - self.cpu_ms_per_request_a?)
    }
}

/// The `limit` frames whose own work moved most from A to B (of those
/// with any: a frame never innermost on either side is left out); `cpu_a`,
/// `cpu_b`: each side's server CPU per request (ms). Ranked by the change
/// of their own CPU per request when both sides know it, else by the
/// change of their self share: shares alone cannot tell the frame that
/// grew from the ones that kept their work while it grew (all shares sum
/// to 1, so one frame's gain is the others' loss). Self rather than total
/// share, because every frame below the app (the server's loop, Rack's
/// call) holds nearly all the samples and would take the whole change of
/// the server's CPU per request.
pub fn changes(
    a_collapsed: &str,
    b_collapsed: &str,
    cpu_a: Option<f64>,
    cpu_b: Option<f64>,
    limit: usize,
) -> Vec<FrameChange> {
    let (a, b) = (
        totals(&parse_collapsed(a_collapsed)),
        totals(&parse_collapsed(b_collapsed)),
    );
    let names: BTreeSet<&String> = a.0.keys().chain(b.0.keys()).collect();
    let share = |m: &BTreeMap<String, u64>, all: u64, f: &String| {
        m.get(f).copied().unwrap_or(0) as f64 / all.max(1) as f64
    };
    let mut out: Vec<FrameChange> = names
        .into_iter()
        .map(|f| {
            let (ta, tb) = (share(&a.0, a.2, f), share(&b.0, b.2, f));
            let (sa, sb) = (share(&a.1, a.2, f), share(&b.1, b.2, f));
            FrameChange {
                frame: f.clone(),
                total_share_a: ta,
                total_share_b: tb,
                change_points: (tb - ta) * 100.0,
                self_share_a: sa,
                self_share_b: sb,
                self_change_points: (sb - sa) * 100.0,
                cpu_ms_per_request_a: cpu_a.map(|c| c * sa),
                cpu_ms_per_request_b: cpu_b.map(|c| c * sb),
            }
        })
        // A frame with no work of its own on either side moved nothing.
        .filter(|c| c.self_share_a > 0.0 || c.self_share_b > 0.0)
        .collect();
    let key = |c: &FrameChange| c.cpu_change_ms().unwrap_or(c.self_change_points).abs();
    out.sort_by(|x, y| {
        key(y)
            .total_cmp(&key(x))
            .then(
                y.self_change_points
                    .abs()
                    .total_cmp(&x.self_change_points.abs()),
            )
            .then(y.change_points.abs().total_cmp(&x.change_points.abs()))
            .then(x.frame.cmp(&y.frame))
    });
    out.truncate(limit);
    out
}

/// Per frame, the samples it is anywhere in (once per sample) and those
/// it is the innermost of, and the samples in all.
type Totals = (BTreeMap<String, u64>, BTreeMap<String, u64>, u64);

fn totals(stacks: &BTreeMap<Vec<String>, u64>) -> Totals {
    let (mut per, mut own) = (BTreeMap::new(), BTreeMap::new());
    let mut all = 0;
    for (stack, &n) in stacks {
        all += n;
        if let Some(leaf) = stack.last() {
            *own.entry(leaf.clone()).or_default() += n;
        }
        let unique: BTreeSet<&String> = stack.iter().collect();
        for f in unique {
            *per.entry(f.clone()).or_default() += n;
        }
    }
    (per, own, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "main;serve;spend_a 30\nmain;serve;spend_b 10\nmain;idle 10\n";
    const B: &str = "main;serve;spend_a 30\nmain;serve;spend_b 30\nmain;idle 10\n";

    #[test]
    fn collapsed_lines_are_read_and_others_skipped() {
        let s = parse_collapsed("a;b 3\nnot a line\na;b 2\nc x\n");
        assert_eq!(s.len(), 1);
        assert_eq!(s[&vec!["a".to_string(), "b".to_string()]], 5);
    }

    /// The rectangles of an SVG with their titles' frame names and widths.
    fn rects(svg: &str) -> Vec<(String, f64)> {
        svg.split("<g><title>")
            .skip(1)
            .map(|g| {
                let name = g.split(" (").next().unwrap().to_string();
                let w = g.split("width=\"").nth(1).unwrap();
                let w: f64 = w.split('"').next().unwrap().parse().unwrap();
                (name, w)
            })
            .collect()
    }

    #[test]
    fn a_frames_width_is_its_share_of_the_samples() {
        let svg = svg(A, "puma", 1000);
        let r: BTreeMap<String, f64> = rects(&svg).into_iter().collect();
        assert!((r["main"] - 1000.0).abs() < 0.01);
        assert!((r["serve"] - 800.0).abs() < 0.01);
        assert!((r["spend_a"] - 600.0).abs() < 0.01);
        assert!((r["spend_b"] - 200.0).abs() < 0.01);
        assert!(svg.contains("(50 samples)"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn names_are_escaped_and_an_empty_profile_says_so() {
        let svg = svg("a<b>;c&d 1\n", "x\"y", 400);
        assert!(svg.contains("a&lt;b&gt;") && svg.contains("c&amp;d") && svg.contains("x&quot;y"));
        assert!(!svg.contains("a<b>"));
        assert!(super::svg("", "none", 400).contains("no samples"));
    }

    #[test]
    fn the_difference_colours_a_grown_frame_red_and_a_shrunk_one_blue() {
        let svg = diff_svg(A, B, "A to B", 1000);
        let title = |name: &str| {
            svg.split("<g><title>")
                .find(|g| g.starts_with(&format!("{name} (")))
                .unwrap()
                .to_string()
        };
        // spend_b: 10 of 50 → 30 of 70, +22.9 points; spend_a 60% → 42.9%.
        assert!(
            title("spend_b").contains("+22.9 points"),
            "{}",
            title("spend_b")
        );
        assert!(title("spend_b").contains("fill=\"rgb(255,80,80)\""));
        assert!(title("spend_a").contains("-17.1 points"));
        assert!(title("spend_a").contains("fill=\"rgb(") && title("spend_a").contains(",255)\""));
    }

    #[test]
    fn changes_rank_frames_by_their_own_cpu_per_request() {
        let c = changes(A, B, Some(10.0), Some(14.0), 3);
        // spend_b's own CPU: 10/50 of 10 ms → 30/70 of 14 ms, 2 → 6 ms.
        assert_eq!(c[0].frame, "spend_b");
        assert!((c[0].change_points - 22.857).abs() < 0.01);
        assert!((c[0].self_change_points - 22.857).abs() < 0.01);
        assert!((c[0].cpu_ms_per_request_a.unwrap() - 2.0).abs() < 1e-9);
        assert!((c[0].cpu_ms_per_request_b.unwrap() - 6.0).abs() < 1e-9);
        assert!((c[0].cpu_change_ms().unwrap() - 4.0).abs() < 1e-9);
        // spend_a kept its CPU per request (6 ms) while its share fell;
        // main, at the bottom of every stack, has no work of its own.
        assert_eq!(c[1].frame, "spend_a");
        assert!((c[1].cpu_change_ms().unwrap()).abs() < 1e-9);
        assert!((c[1].self_change_points + 17.143).abs() < 0.01);
        assert_eq!(c[2].frame, "idle");
        assert_eq!(c.len(), 3);
        // main and serve are never innermost: no work of their own.
        assert_eq!(changes(A, B, Some(10.0), Some(14.0), 10).len(), 3);
    }

    #[test]
    fn without_cpu_per_request_changes_rank_by_self_share() {
        let c = changes(A, B, None, Some(14.0), 2);
        assert_eq!(c[0].frame, "spend_b");
        assert_eq!(c[0].cpu_ms_per_request_a, None);
        assert_eq!(c[0].cpu_change_ms(), None);
        assert_eq!(c[1].frame, "spend_a");
    }
}
