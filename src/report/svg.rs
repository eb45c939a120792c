//! A small inline-SVG plotter: axes with ticks and units, lines, points,
//! whiskers, bands and bars. No scripts, no external resources.

use std::fmt::Write;

/// Ten distinguishable colours (Tableau 10).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
    "#bab0ac", "#e15759",
];
pub const RED: &str = "#d62728";

/// A server variant's colour: its place among the study's `variants`
/// (sorted) in [`PALETTE`], so every chart gives it the same one.
pub fn color(variants: &[String], v: &str) -> &'static str {
    let i = variants.iter().position(|x| x == v).unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub min: f64,
    pub max: f64,
    pub log: bool,
    pub label: String,
    pub ticks: Vec<(f64, String)>,
}

impl Axis {
    /// The axis of a chart with a row per item (`n` rows): no ticks and
    /// no label, the rows label themselves.
    pub fn rows(n: usize) -> Axis {
        Axis {
            min: 0.0,
            max: n as f64,
            log: false,
            label: String::new(),
            ticks: Vec::new(),
        }
    }

    /// A linear axis from `min` to a nice max over `max`, with nice ticks.
    pub fn linear(min: f64, max: f64, label: &str, fmt: &dyn Fn(f64) -> String) -> Axis {
        let max = if max > min { max } else { min + 1.0 };
        let step = nice_step((max - min) / 5.0);
        let top = (max / step).ceil() * step;
        let mut ticks = Vec::new();
        let mut v = (min / step).ceil() * step;
        while v <= top + step * 1e-9 {
            ticks.push((v, fmt(v)));
            v += step;
        }
        Axis {
            min,
            max: top,
            log: false,
            label: label.into(),
            ticks,
        }
    }

    /// A log10 axis covering `[min, max]` (both > 0), ticks at 1-2-5
    /// decades as room allows.
    pub fn log(min: f64, max: f64, label: &str, fmt: &dyn Fn(f64) -> String) -> Axis {
        let min = min.max(1e-9);
        let max = max.max(min * 1.0001);
        let lo = min.log10().floor() as i32;
        let hi = max.log10().ceil().max(lo as f64 + 1.0) as i32;
        let mults: &[f64] = if hi - lo <= 2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let mut ticks = Vec::new();
        for d in lo..=hi {
            for m in mults {
                let v = m * 10f64.powi(d);
                if v >= 10f64.powi(lo) && v <= 10f64.powi(hi) * 1.0001 {
                    ticks.push((v, fmt(v)));
                }
            }
        }
        Axis {
            min: 10f64.powi(lo),
            max: 10f64.powi(hi),
            log: true,
            label: label.into(),
            ticks,
        }
    }

    /// Explicit ticks (levels in the data), log or linear.
    pub fn at(values: &[f64], log: bool, label: &str, fmt: &dyn Fn(f64) -> String) -> Axis {
        let mut v: Vec<f64> = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        v.dedup();
        let (lo, hi) = match (v.first(), v.last()) {
            (Some(a), Some(b)) if b > a => (*a, *b),
            (Some(a), _) => (a * 0.5, a * 1.5 + 1.0),
            _ => (0.0, 1.0),
        };
        let (min, max) = if log {
            (lo / 1.3, hi * 1.3)
        } else {
            let pad = (hi - lo) * 0.06;
            ((lo - pad).max(0.0), hi + pad)
        };
        Axis {
            min,
            max,
            log,
            label: label.into(),
            ticks: v.iter().map(|x| (*x, fmt(*x))).collect(),
        }
    }

    fn frac(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.min * 1e-3);
            (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (v - self.min) / (self.max - self.min)
        }
    }
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 2.5 {
        2.5
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// One chart: plot area in pixels, two axes, and the drawn marks.
pub struct Plot {
    pub w: f64,
    pub h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    pub x: Axis,
    pub y: Axis,
    under: String,
    body: String,
    legend: Vec<(String, String, bool)>,
}

impl Plot {
    pub fn new(w: f64, h: f64, x: Axis, y: Axis) -> Plot {
        Plot {
            w,
            h,
            left: 70.0,
            right: 28.0,
            top: 28.0,
            bottom: 46.0,
            x,
            y,
            under: String::new(),
            body: String::new(),
            legend: Vec::new(),
        }
    }

    /// Room on the left for long category labels.
    pub fn with_left(mut self, left: f64) -> Plot {
        self.left = left;
        self
    }

    pub fn px(&self, v: f64) -> f64 {
        self.left + self.x.frac(v).clamp(-0.02, 1.02) * (self.w - self.left - self.right)
    }
    pub fn py(&self, v: f64) -> f64 {
        self.h - self.bottom - self.y.frac(v).clamp(-0.02, 1.02) * (self.h - self.top - self.bottom)
    }

    pub fn legend(&mut self, label: &str, color: &str, dashed: bool) {
        if !self.legend.iter().any(|(l, _, _)| l == label) {
            self.legend.push((label.into(), color.into(), dashed));
        }
    }

    pub fn line(&mut self, pts: &[(f64, f64)], color: &str, width: f64, dash: bool, title: &str) {
        if pts.is_empty() {
            return;
        }
        let d: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", self.px(*x), self.py(*y)))
            .collect();
        let _ = write!(
            self.body,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"{width}\"{} points=\"{}\"><title>{}</title></polyline>",
            if dash { " stroke-dasharray=\"5 3\"" } else { "" },
            d.join(" "),
            esc(title)
        );
    }

    pub fn point(&mut self, x: f64, y: f64, r: f64, color: &str, title: &str) {
        let _ = write!(
            self.body,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{color}\"><title>{}</title></circle>",
            self.px(x),
            self.py(y),
            esc(title)
        );
    }

    /// A point at pixel coordinates.
    pub fn circle_px(&mut self, x: f64, y: f64, r: f64, color: &str, title: &str) {
        let _ = write!(
            self.body,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{color}\" fill-opacity=\"0.8\"><title>{}</title></circle>",
            esc(title)
        );
    }

    /// A ring (no fill) at pixel coordinates.
    pub fn ring_px(&mut self, x: f64, y: f64, r: f64, color: &str, title: &str) {
        let _ = write!(
            self.body,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"><title>{}</title></circle>",
            esc(title)
        );
    }

    /// A vertical whisker from `lo` to `hi` at `x` (min-max across repeats).
    pub fn vwhisker_shift(&mut self, x: f64, shift: f64, lo: f64, hi: f64, color: &str) {
        let (px, a, b) = (self.px(x) + shift, self.py(lo), self.py(hi));
        let _ = write!(
            self.body,
            "<path d=\"M{px:.1},{a:.1}V{b:.1}M{:.1},{a:.1}h8M{:.1},{b:.1}h8\" stroke=\"{color}\" stroke-width=\"1.5\" fill=\"none\"/>",
            px - 4.0,
            px - 4.0
        );
    }

    /// A horizontal whisker at pixel row `py` from `lo` to `hi` (data x).
    pub fn hwhisker_px(&mut self, lo: f64, hi: f64, py: f64, color: &str) {
        let (a, b) = (self.px(lo), self.px(hi));
        let _ = write!(
            self.body,
            "<path d=\"M{a:.1},{py:.1}H{b:.1}M{a:.1},{:.1}v8M{b:.1},{:.1}v8\" stroke=\"{color}\" stroke-width=\"1.5\" fill=\"none\"/>",
            py - 4.0,
            py - 4.0
        );
    }

    /// A shaded band over x from `x0` to `x1`, full height (drawn under).
    pub fn xband(&mut self, x0: f64, x1: f64, color: &str, opacity: f64, title: &str) {
        let (a, b) = (self.px(x0), self.px(x1));
        let _ = write!(
            self.under,
            "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\" fill-opacity=\"{opacity}\"><title>{}</title></rect>",
            self.top,
            (b - a).max(1.0),
            self.h - self.top - self.bottom,
            esc(title)
        );
    }

    /// A shaded band between two lines, each point (x, low, high) in
    /// data units (drawn under): an interval as it moves along x.
    pub fn band(&mut self, pts: &[(f64, f64, f64)], color: &str, opacity: f64, title: &str) {
        if pts.is_empty() {
            return;
        }
        let top = pts.iter().map(|&(x, _, hi)| (x, hi));
        let bottom = pts.iter().rev().map(|&(x, lo, _)| (x, lo));
        let d: Vec<String> = top
            .chain(bottom)
            .map(|(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y)))
            .collect();
        let _ = write!(
            self.under,
            "<polygon points=\"{}\" fill=\"{color}\" fill-opacity=\"{opacity}\" stroke=\"none\"><title>{}</title></polygon>",
            d.join(" "),
            esc(title)
        );
    }

    /// A horizontal bar from the x axis minimum to `v` at pixel row `py`.
    pub fn hbar_px(&mut self, v: f64, py: f64, height: f64, color: &str, title: &str) {
        let a = self.px(self.x.min);
        let b = self.px(v);
        let _ = write!(
            self.body,
            "<rect x=\"{a:.1}\" y=\"{py:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"{color}\"><title>{}</title></rect>",
            (b - a).max(0.0),
            esc(title)
        );
    }

    /// A horizontal bar from `v0` to `v1` at pixel row `py`: one part of
    /// a stacked bar.
    pub fn hspan_px(&mut self, v0: f64, v1: f64, py: f64, height: f64, color: &str, title: &str) {
        let (a, b) = (self.px(v0), self.px(v1));
        let _ = write!(
            self.body,
            "<rect x=\"{a:.1}\" y=\"{py:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"{color}\"><title>{}</title></rect>",
            (b - a).max(0.0),
            esc(title)
        );
    }

    /// A vertical marker line across the plot with a label at the top.
    pub fn vline(&mut self, x: f64, color: &str, label: &str) {
        let px = self.px(x);
        // Near the right edge the label goes on the left of the line.
        let (tx, anchor) = if px > self.w - self.right - 7.0 * label.chars().count() as f64 {
            (px - 3.0, "end")
        } else {
            (px + 3.0, "start")
        };
        let _ = write!(
            self.body,
            "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/><text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{color}\" text-anchor=\"{anchor}\">{}</text>",
            self.top,
            self.h - self.bottom,
            self.top + 11.0,
            esc(label)
        );
    }

    /// Text at data coordinates.
    pub fn text(&mut self, x: f64, y: f64, s: &str, color: &str, anchor: &str) {
        let _ = write!(
            self.body,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{color}\" text-anchor=\"{anchor}\">{}</text>",
            self.px(x),
            self.py(y),
            esc(s)
        );
    }

    /// Text at pixel coordinates.
    pub fn text_px(&mut self, x: f64, y: f64, s: &str, color: &str, anchor: &str) {
        let _ = write!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"11\" fill=\"{color}\" text-anchor=\"{anchor}\">{}</text>",
            esc(s)
        );
    }

    pub fn plot_left(&self) -> f64 {
        self.left
    }
    pub fn plot_top(&self) -> f64 {
        self.top
    }

    /// The finished `<svg>` element. `y_grid` draws category-free grid lines.
    pub fn finish(self, title: &str, x_grid: bool) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{t}\" font-family=\"system-ui, sans-serif\"><title>{t}</title><rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>",
            w = self.w,
            h = self.h,
            t = esc(title)
        );
        s.push_str(&self.under);
        let (x0, x1, y0, y1) = (
            self.left,
            self.w - self.right,
            self.top,
            self.h - self.bottom,
        );
        // Grid and ticks.
        for (v, l) in &self.y.ticks {
            let py = self.py(*v);
            let _ = write!(
                s,
                "<line x1=\"{x0}\" x2=\"{x1}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#e4e4e4\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#444\">{}</text>",
                x0 - 5.0,
                py + 4.0,
                esc(l)
            );
        }
        // A label that would overlap the last one drawn is left out (its
        // tick stays): close levels, such as a bisection's, stay readable.
        let mut last_label_end = f64::MIN;
        for (v, l) in &self.x.ticks {
            let px = self.px(*v);
            if x_grid {
                let _ = write!(
                    s,
                    "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"#eeeeee\"/>"
                );
            }
            let _ = write!(
                s,
                "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{y1}\" y2=\"{:.1}\" stroke=\"#888\"/>",
                y1 + 4.0,
            );
            // About 6.5 px per character at font-size 11.
            let half = l.chars().count() as f64 * 3.3;
            if px - half < last_label_end + 4.0 {
                continue;
            }
            last_label_end = px + half;
            let _ = write!(
                s,
                "<text x=\"{px:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#444\">{}</text>",
                y1 + 16.0,
                esc(l)
            );
        }
        let _ = write!(
            s,
            "<path d=\"M{x0},{y0}V{y1}H{x1}\" stroke=\"#888\" fill=\"none\"/>"
        );
        s.push_str(&self.body);
        // Axis labels.
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" fill=\"#222\">{}</text>",
            (x0 + x1) / 2.0,
            self.h - 8.0,
            esc(&self.x.label)
        );
        let _ = write!(
            s,
            "<text x=\"{x0}\" y=\"{:.1}\" font-size=\"12\" fill=\"#222\">{}</text>",
            y0 - 12.0,
            esc(&self.y.label)
        );
        // Legend, top right.
        let mut lx = x1;
        for (label, color, dashed) in self.legend.iter().rev() {
            let wlabel = 7.0 * label.chars().count() as f64 + 28.0;
            lx -= wlabel;
            let _ = write!(
                s,
                "<line x1=\"{lx:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"3\"{}/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#222\">{}</text>",
                lx + 16.0,
                y0 - 16.0,
                y0 - 16.0,
                if *dashed { " stroke-dasharray=\"5 3\"" } else { "" },
                lx + 20.0,
                y0 - 12.0,
                esc(label)
            );
        }
        s.push_str("</svg>");
        s
    }
}

/// One bar of a [`BarRow`]: its name, its opacity over the row's colour,
/// and (median, min, max); None draws nothing.
pub struct Bar<'a> {
    pub name: &'a str,
    pub opacity: f64,
    pub value: Option<(f64, f64, f64)>,
}

/// One row of [`hbar_rows`]: its label (left of the plot, and the start
/// of each bar's tooltip), its colour and bars, what the row says when
/// none of its bars has a value (in red), and a note at its right end
/// with the note's colour (empty for none).
pub struct BarRow<'a> {
    pub label: String,
    pub color: String,
    pub bars: Vec<Bar<'a>>,
    pub empty: String,
    pub note: (String, &'a str),
}

/// A horizontal bar chart with a row per [`BarRow`]: each bar its median,
/// a whisker from min to max and "name median" beside it; `left` pixels
/// for the rows' labels.
pub fn hbar_rows(
    rows: &[BarRow],
    left: f64,
    title: &str,
    xlabel: &str,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let per_row = rows.iter().map(|r| r.bars.len()).max().unwrap_or(1);
    let row_h = 14.0 * per_row as f64 + 12.0;
    let h = 28.0 + 46.0 + row_h * rows.len() as f64;
    let xmax = rows
        .iter()
        .flat_map(|r| r.bars.iter().filter_map(|b| b.value.map(|v| v.2)))
        .fold(0f64, f64::max);
    let x = Axis::linear(0.0, if xmax > 0.0 { xmax * 1.05 } else { 1.0 }, xlabel, fmt);
    let y = Axis::rows(rows.len());
    let mut p = Plot::new(1150.0, h, x, y).with_left(left);
    for (i, r) in rows.iter().enumerate() {
        let top = p.plot_top() + row_h * i as f64 + 6.0;
        let middle = top + row_h / 2.0;
        p.text_px(p.plot_left() - 8.0, middle, &r.label, "#222", "end");
        let mut any = false;
        for (j, b) in r.bars.iter().enumerate() {
            let Some((med, lo, hi)) = b.value else {
                continue;
            };
            any = true;
            let y = top + 14.0 * j as f64;
            let tip = format!(
                "{}, {}: median {} (min {}, max {})",
                r.label,
                b.name,
                fmt(med),
                fmt(lo),
                fmt(hi)
            );
            let bar = format!("{}\" fill-opacity=\"{}", r.color, b.opacity);
            p.hbar_px(med, y, 12.0, &bar, &tip);
            p.hwhisker_px(lo, hi, y + 6.0, "#333");
            let xr = p.px(hi) + 6.0;
            p.text_px(
                xr,
                y + 10.0,
                &format!("{} {}", b.name, fmt(med)),
                "#333",
                "start",
            );
        }
        if !any {
            let l = p.plot_left();
            p.text_px(l + 6.0, middle, &r.empty, RED, "start");
        } else if !r.note.0.is_empty() {
            let w = p.w;
            p.text_px(w - 20.0, middle, &r.note.0, r.note.1, "end");
        }
    }
    p.finish(title, true)
}
