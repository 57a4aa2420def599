//! Inline SVG charts: no JavaScript, no fonts beyond the page's, every text escaped.

use std::fmt::Write;

mod layout;
mod spark;

pub use layout::{axis_tick_label, text_width, TextBox};
use layout::{reference_text, Layout};
pub use spark::{Spark, SPARK_H, SPARK_W};

/// Colour-blind-friendly categorical palette (Tableau 10).
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Escape text for SVG/HTML content and attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    Log2,
    Log10,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Marker {
    Circle,
    Square,
}

#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Hover text (`<title>`).
    pub tip: String,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: String,
    pub points: Vec<Point>,
    /// Join the points.
    pub line: bool,
    /// Draw the CI as a shaded band (otherwise as error bars).
    pub band: bool,
    pub marker: Marker,
}

/// A horizontal reference line, optionally with a shaded band (its CI).
#[derive(Debug, Clone)]
pub struct HLine {
    pub y: f64,
    pub band: Option<(f64, f64)>,
    /// Hover text.
    pub label: String,
    pub color: String,
    pub dash: &'static str,
    /// Short text drawn in the right margin, level with the line.
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Include 0 in the y range.
    pub y_zero: bool,
    pub series: Vec<Series>,
    pub hlines: Vec<HLine>,
    /// Mark the efficiency–accuracy frontier of all points (lower x is better; y by the rule).
    pub frontier: Option<Frontier>,
    /// Stretch the x range over these data values (e.g. every step count of the task).
    pub x_hint: Option<(f64, f64)>,
    /// Text drawn in the middle of the plot area (e.g. why no line is drawn).
    pub message: Option<String>,
    /// Draw a colour key of the series under the chart (where no key is beside it on the page).
    pub key: bool,
}

/// What "better" means on the y axis for the frontier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Frontier {
    /// Lower is better (SER).
    Lower,
    /// Closer to this value is better (TER: the exact optimum; below it means samples less
    /// diverse than the language).
    Toward(f64),
}

/// A data range `(min, max)`.
type Range = (f64, f64);

/// 440 px: three plots side by side in the page's 1420 px column.
const W: f64 = 440.0;
const H: f64 = 290.0;
const ML: f64 = 52.0;
/// The right margin holds the reference lines' labels, outside the data.
const MR: f64 = 78.0;
/// Vertical room one reference-line label needs (font 9.5 px, with the font's ascent and
/// descent).
const LABEL_GAP: f64 = 12.0;
const MT: f64 = 26.0;
const MB: f64 = 42.0;

fn tr(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log2 => v.log2(),
        Scale::Log10 => v.log10(),
    }
}

fn valid(scale: Scale, v: f64) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// A short tick label.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if (v - v.round()).abs() < 1e-9 * a.max(1.0) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let digits = (-(a.log10().floor()) as usize + 2).min(6);
        let s = format!("{v:.digits$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn nice_step(range: f64, target: f64) -> f64 {
    let raw = range / target;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Domain (in transformed units) and tick values (in data units) of an axis.
pub fn axis(scale: Scale, min: f64, max: f64, zero: bool) -> ((f64, f64), Vec<f64>) {
    match scale {
        Scale::Linear => {
            let (mut lo, mut hi) = (min, max);
            if zero {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if hi - lo < 1e-12 {
                let pad = (hi.abs() * 0.1).max(if zero { 0.05 } else { 1e-3 });
                hi += pad;
                if !(zero && lo == 0.0) {
                    lo -= pad;
                }
            }
            let step = nice_step(hi - lo, 5.0);
            let lo = (lo / step).floor() * step;
            let hi = (hi / step).ceil() * step;
            let mut ticks = Vec::new();
            let mut t = lo;
            while t <= hi + step * 1e-6 {
                ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
                t += step;
            }
            ((lo, hi), ticks)
        }
        Scale::Log2 => {
            let (mut lo, mut hi) = (tr(scale, min).floor(), tr(scale, max).ceil());
            if hi - lo < 1.0 {
                lo -= 0.5;
                hi += 0.5;
            }
            let (e0, e1) = (lo.ceil() as i32, hi.floor() as i32);
            let every = (((e1 - e0) as f64) / 8.0).ceil().max(1.0) as i32;
            let ticks: Vec<f64> = (e0..=e1)
                .filter(|e| (e - e0) % every == 0)
                .map(|e| 2f64.powi(e))
                .collect();
            ((lo, hi), ticks)
        }
        Scale::Log10 => {
            let (mut lo, mut hi) = (min.log10(), max.log10());
            if hi - lo < 0.3 {
                let mid = (hi + lo) / 2.0;
                lo = mid - 0.15;
                hi = mid + 0.15;
            }
            let pad = (hi - lo) * 0.05;
            let (lo, hi) = (lo - pad, hi + pad);
            let mut ticks = Vec::new();
            let mults: &[f64] = if hi - lo <= 0.7 {
                &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
            } else if hi - lo <= 2.5 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            for e in (lo.floor() as i32)..=(hi.ceil() as i32) {
                for m in mults {
                    let v = m * 10f64.powi(e);
                    if v.log10() >= lo && v.log10() <= hi {
                        ticks.push(v);
                    }
                }
            }
            ((lo, hi), ticks)
        }
    }
}

impl Chart {
    /// Whether any series has a point: a chart of reference lines alone is not drawn.
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty())
    }

    pub fn render(&self) -> String {
        let lay = self.layout();
        let f = &lay.frame;
        let (ml, pw, ph) = (f.ml, f.pw, f.ph);
        let mut s = String::new();
        self.draw_axes(&mut s, &lay);
        // The data area clips what it draws; reference labels go in the right margin.
        let inner = format!(
            r##"<svg x="{ml}" y="{MT}" width="{pw}" height="{ph}" viewBox="{ml} {MT} {pw} {ph}" overflow="hidden">"##
        );
        s.push_str(&inner);
        self.draw_reference_lines(&mut s, f);
        s.push_str("</svg>");
        draw_reference_labels(&mut s, f, &self.reference_labels(f));
        s.push_str(&inner);
        self.draw_frontier(&mut s, f);
        for ser in &self.series {
            self.draw_series(&mut s, f, ser);
        }
        s.push_str("</svg>");
        self.draw_key(&mut s, &lay);
        for t in &lay.texts {
            s.push_str(&t.svg());
        }
        s.push_str("</svg>");
        s
    }

    /// Frame and grid (the texts are drawn last, over everything).
    fn draw_axes(&self, s: &mut String, lay: &Layout) {
        let f = &lay.frame;
        let (ml, pw, ph, h) = (f.ml, f.pw, f.ph, lay.height);
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" aria-label="{t}"><title>{t}</title>"##,
            t = esc(&self.title)
        );
        let _ = write!(
            s,
            r##"<rect x="{ml}" y="{MT}" width="{pw}" height="{ph}" fill="#fff" stroke="#bbb"/>"##
        );
        for &t in &lay.xticks {
            let x = f.px(t);
            if x >= ml && x <= ml + pw {
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" y1="{MT}" x2="{x:.1}" y2="{b:.1}" stroke="#eee"/>"##,
                    b = MT + ph,
                );
            }
        }
        for &t in &lay.yticks {
            let y = f.py(t);
            if y >= MT && y <= MT + ph {
                let _ = write!(
                    s,
                    r##"<line x1="{ml}" y1="{y:.1}" x2="{r:.1}" y2="{y:.1}" stroke="#eee"/>"##,
                    r = ml + pw,
                );
            }
        }
    }

    /// The colour key's swatches (a line where the series has one, and its marker).
    fn draw_key(&self, s: &mut String, lay: &Layout) {
        for &(i, x, y) in &lay.key {
            let ser = &self.series[i];
            let c = esc(&ser.color);
            if ser.line {
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" y1="{y:.1}" x2="{r:.1}" y2="{y:.1}" stroke="{c}" stroke-width="1.8"/>"##,
                    r = x + 18.0
                );
            }
            let cx = x + 9.0;
            let _ = match ser.marker {
                Marker::Circle => write!(
                    s,
                    r##"<circle cx="{cx:.1}" cy="{y:.1}" r="3.2" fill="{c}" stroke="#fff" stroke-width="0.8"/>"##
                ),
                Marker::Square => write!(
                    s,
                    r##"<rect x="{a:.1}" y="{b:.1}" width="8" height="8" fill="{c}" stroke="#222" stroke-width="0.8"/>"##,
                    a = cx - 4.0,
                    b = y - 4.0
                ),
            };
        }
    }

    /// Where each drawn reference line's label wants to sit (level with its line).
    fn reference_labels<'h>(&'h self, f: &Frame) -> Vec<(f64, &'h HLine)> {
        self.hlines
            .iter()
            .filter(|h| valid(self.y_scale, h.y))
            .map(|h| (f.cy(h.y), h))
            .collect()
    }

    /// Reference lines with their CI bands.
    fn draw_reference_lines(&self, s: &mut String, f: &Frame) {
        let (ml, pw) = (f.ml, f.pw);
        for h in &self.hlines {
            if !valid(self.y_scale, h.y) {
                continue;
            }
            if let Some((lo, hi)) = h.band {
                if valid(self.y_scale, lo) && valid(self.y_scale, hi) {
                    let _ = write!(
                        s,
                        r##"<rect x="{ml}" y="{y:.1}" width="{pw}" height="{hh:.1}" fill="{c}" fill-opacity="0.12"/>"##,
                        y = f.cy(hi),
                        hh = (f.cy(lo) - f.cy(hi)).max(0.5),
                        c = esc(&h.color)
                    );
                }
            }
            let _ = write!(
                s,
                r##"<line x1="{ml}" y1="{y:.1}" x2="{r:.1}" y2="{y:.1}" stroke="{c}" stroke-width="1.5" stroke-dasharray="{d}"><title>{t}</title></line>"##,
                y = f.py(h.y),
                r = ml + pw,
                c = esc(&h.color),
                d = h.dash,
                t = esc(&format!("{}: {}", h.label, tick_label(h.y))),
            );
        }
    }

    /// Frontier: halos around the cells no other cell beats in both cost and quality.
    fn draw_frontier(&self, s: &mut String, f: &Frame) {
        let (px, py) = (|v| f.px(v), |v| f.py(v));
        if let Some(rule) = self.frontier {
            let pts: Vec<(f64, f64)> = self
                .series
                .iter()
                .flat_map(|s| s.points.iter())
                .filter(|p| valid(self.x_scale, p.x) && valid(self.y_scale, p.y))
                .map(|p| (p.x, p.y))
                .collect();
            let front = frontier(&pts, rule);
            if !front.is_empty() {
                let mut d = String::new();
                for (i, (x, y)) in front.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1}",
                        if i == 0 { "M" } else { " L" },
                        px(*x),
                        py(*y)
                    );
                    let _ = write!(
                        s,
                        r##"<circle cx="{:.1}" cy="{:.1}" r="7.5" fill="#000" fill-opacity="0.10" stroke="#777" stroke-width="1"/>"##,
                        px(*x),
                        py(*y)
                    );
                }
                if front.len() > 1 {
                    let _ = write!(
                        s,
                        r##"<path d="{d}" fill="none" stroke="#888" stroke-width="1" stroke-dasharray="3 3"/>"##
                    );
                }
            }
        }
    }

    /// One series: its CI band, line, error bars and markers.
    fn draw_series(&self, s: &mut String, f: &Frame, ser: &Series) {
        let (px, py, cy) = (|v| f.px(v), |v| f.py(v), |v| f.cy(v));
        let c = esc(&ser.color);
        let pts: Vec<&Point> = ser
            .points
            .iter()
            .filter(|p| valid(self.x_scale, p.x) && valid(self.y_scale, p.y))
            .collect();
        if ser.band && pts.len() > 1 {
            let with: Vec<&&Point> = pts
                .iter()
                .filter(|p| {
                    p.lo.is_some_and(|v| valid(self.y_scale, v))
                        && p.hi.is_some_and(|v| valid(self.y_scale, v))
                })
                .collect();
            if with.len() > 1 {
                let mut d = String::new();
                for (i, p) in with.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1}",
                        if i == 0 { "M" } else { " L" },
                        px(p.x),
                        cy(p.hi.unwrap_or(p.y))
                    );
                }
                for p in with.iter().rev() {
                    let _ = write!(d, " L{:.1},{:.1}", px(p.x), cy(p.lo.unwrap_or(p.y)));
                }
                let _ = write!(
                    s,
                    r##"<path d="{d} Z" fill="{c}" fill-opacity="0.16" stroke="none"/>"##
                );
            }
        }
        if ser.line && pts.len() > 1 {
            let mut d = String::new();
            for (i, p) in pts.iter().enumerate() {
                let _ = write!(
                    d,
                    "{}{:.1},{:.1}",
                    if i == 0 { "M" } else { " L" },
                    px(p.x),
                    py(p.y)
                );
            }
            let _ = write!(
                s,
                r##"<path d="{d}" fill="none" stroke="{c}" stroke-width="1.8"/>"##
            );
        }
        for p in &pts {
            let (x, y) = (px(p.x), py(p.y));
            if !ser.band || pts.len() == 1 {
                if let (Some(lo), Some(hi)) = (p.lo, p.hi) {
                    if valid(self.y_scale, lo) && valid(self.y_scale, hi) {
                        let _ = write!(
                            s,
                            r##"<path d="M{x:.1},{a:.1} V{b:.1} M{l:.1},{a:.1} H{r:.1} M{l:.1},{b:.1} H{r:.1}" stroke="{c}" stroke-width="1" fill="none"/>"##,
                            a = cy(lo),
                            b = cy(hi),
                            l = x - 3.0,
                            r = x + 3.0
                        );
                    }
                }
            }
            match ser.marker {
                Marker::Circle => {
                    let _ = write!(
                        s,
                        r##"<circle cx="{x:.1}" cy="{y:.1}" r="3.2" fill="{c}" stroke="#fff" stroke-width="0.8"><title>{t}</title></circle>"##,
                        t = esc(&p.tip)
                    );
                }
                Marker::Square => {
                    let _ = write!(
                        s,
                        r##"<rect x="{a:.1}" y="{b:.1}" width="8" height="8" fill="{c}" stroke="#222" stroke-width="0.8"><title>{t}</title></rect>"##,
                        a = x - 4.0,
                        b = y - 4.0,
                        t = esc(&p.tip)
                    );
                }
            }
        }
    }

    /// Data extent of x and y over points (with CIs) and reference lines.
    fn extent(&self) -> (Option<Range>, Option<Range>) {
        let mut xs: Vec<f64> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        for ser in &self.series {
            for p in &ser.points {
                if !valid(self.x_scale, p.x) || !valid(self.y_scale, p.y) {
                    continue;
                }
                xs.push(p.x);
                ys.push(p.y);
                for v in [p.lo, p.hi].into_iter().flatten() {
                    if valid(self.y_scale, v) {
                        ys.push(v);
                    }
                }
            }
        }
        for h in &self.hlines {
            if valid(self.y_scale, h.y) {
                ys.push(h.y);
            }
            if let Some((lo, hi)) = h.band {
                ys.extend([lo, hi].into_iter().filter(|v| valid(self.y_scale, *v)));
            }
        }
        let range = |v: &[f64]| {
            (!v.is_empty()).then(|| {
                (
                    v.iter().copied().fold(f64::INFINITY, f64::min),
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                )
            })
        };
        (range(&xs), range(&ys))
    }
}

/// The reference lines' labels in the right margin, spread so that none overlap, each with a
/// leader to its line.
fn draw_reference_labels(s: &mut String, f: &Frame, labels: &[(f64, &HLine)]) {
    for (y, line_y, h) in spread_labels(labels, MT + 4.0, MT + f.ph - 4.0) {
        let (x0, x1) = (f.ml + f.pw, f.ml + f.pw + 4.0);
        let t = reference_text(f, y, h);
        let _ = write!(
            s,
            r##"<path d="M{x0:.1},{line_y:.1} L{x1:.1},{y:.1}" stroke="{c}" stroke-width="1" fill="none"/><text class="hlabel" x="{tx:.1}" y="{ty:.1}" font-size="9.5" fill="{c}"><title>{tip}</title>{text}</text>"##,
            c = esc(&h.color),
            tx = t.x,
            ty = t.y,
            tip = esc(&format!("{}: {}", h.label, tick_label(h.y))),
            text = esc(&t.text)
        );
    }
}

/// Maps data to pixels inside the plot area.
struct Frame {
    x_scale: Scale,
    y_scale: Scale,
    /// The axes' ranges, in transformed units.
    x: (f64, f64),
    y: (f64, f64),
    /// Left margin: wide enough for the y tick labels and the y-axis title beside them.
    ml: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn px(&self, v: f64) -> f64 {
        self.ml + (tr(self.x_scale, v) - self.x.0) / (self.x.1 - self.x.0) * self.pw
    }

    fn py(&self, v: f64) -> f64 {
        MT + self.ph - (tr(self.y_scale, v) - self.y.0) / (self.y.1 - self.y.0) * self.ph
    }

    /// `py` clamped to the plot area (CI bands reach past it).
    fn cy(&self, v: f64) -> f64 {
        self.py(v).clamp(MT, MT + self.ph)
    }
}

/// Place labels at their lines' heights, pushed apart to at least [`LABEL_GAP`] and kept
/// within `top..=bottom`: `(label y, line y, line)`, sorted top to bottom.
fn spread_labels<'a>(
    labels: &[(f64, &'a HLine)],
    top: f64,
    bottom: f64,
) -> Vec<(f64, f64, &'a HLine)> {
    let mut placed: Vec<(f64, f64, &HLine)> = labels
        .iter()
        .map(|&(y, h)| (y.clamp(top, bottom), y, h))
        .collect();
    placed.sort_by(|a, b| a.0.total_cmp(&b.0));
    for i in 1..placed.len() {
        placed[i].0 = placed[i].0.max(placed[i - 1].0 + LABEL_GAP);
    }
    // Too low at the end: shift the tail back up, keeping the gaps.
    if let Some(last) = placed.last().map(|p| p.0) {
        if last > bottom {
            let mut limit = bottom;
            for p in placed.iter_mut().rev() {
                p.0 = p.0.min(limit);
                limit = p.0 - LABEL_GAP;
            }
        }
    }
    placed
}

/// The points (sorted by x) that no other point beats in both x (lower is better) and y.
pub fn frontier(points: &[(f64, f64)], rule: Frontier) -> Vec<(f64, f64)> {
    let badness = |y: f64| match rule {
        Frontier::Lower => y,
        Frontier::Toward(t) => (y - t).abs(),
    };
    let mut pts = points.to_vec();
    pts.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(badness(a.1).total_cmp(&badness(b.1)))
    });
    let mut front: Vec<(f64, f64)> = Vec::new();
    let mut best = f64::INFINITY;
    for p in pts {
        if badness(p.1) < best {
            best = badness(p.1);
            front.push(p);
        }
    }
    front
}

#[cfg(test)]
mod tests;
