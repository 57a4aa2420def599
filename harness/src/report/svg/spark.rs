//! Sparklines: one metric over runs (the history page).

use super::esc;
use std::fmt::Write;

/// A sparkline: values over runs with an optional CI band, marked points and vertical
/// markers (e.g. commit changes). `None` values leave gaps.
pub struct Spark<'a> {
    pub values: &'a [Option<f64>],
    pub bands: &'a [Option<(f64, f64)>],
    /// Indices of points to mark as changes.
    pub changed: &'a [usize],
    /// Indices where a vertical marker is drawn (before that point), with its colour.
    pub markers: &'a [(usize, &'a str)],
    pub tips: &'a [String],
    pub color: &'a str,
}

pub const SPARK_W: f64 = 170.0;
pub const SPARK_H: f64 = 38.0;

impl Spark<'_> {
    pub fn render(&self) -> String {
        let n = self.values.len();
        let mut ys: Vec<f64> = self.values.iter().flatten().copied().collect();
        for b in self.bands.iter().flatten() {
            ys.push(b.0);
            ys.push(b.1);
        }
        ys.retain(|v| v.is_finite());
        let (mut lo, mut hi) = if ys.is_empty() {
            (0.0, 1.0)
        } else {
            (
                ys.iter().copied().fold(f64::INFINITY, f64::min),
                ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        };
        if hi - lo < 1e-12 {
            let pad = (hi.abs() * 0.05).max(1e-6);
            lo -= pad;
            hi += pad;
        }
        let (pad_x, pad_y) = (5.0, 5.0);
        let px = |i: usize| {
            if n <= 1 {
                SPARK_W / 2.0
            } else {
                pad_x + i as f64 / (n - 1) as f64 * (SPARK_W - 2.0 * pad_x)
            }
        };
        let py = |v: f64| SPARK_H - pad_y - (v - lo) / (hi - lo) * (SPARK_H - 2.0 * pad_y);
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="spark" viewBox="0 0 {SPARK_W} {SPARK_H}" width="{SPARK_W}" height="{SPARK_H}">"##
        );
        for &(i, color) in self.markers {
            let x = (px(i) + px(i.saturating_sub(1))) / 2.0;
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="1" x2="{x:.1}" y2="{b:.1}" stroke="{c}" stroke-width="1" stroke-dasharray="2 2"/>"##,
                b = SPARK_H - 1.0,
                c = esc(color)
            );
        }
        // Band.
        let mut upper = String::new();
        let mut lower = Vec::new();
        for (i, b) in self.bands.iter().enumerate() {
            if let Some((a, c)) = b {
                if a.is_finite() && c.is_finite() {
                    let _ = write!(
                        upper,
                        "{}{:.1},{:.1}",
                        if upper.is_empty() { "M" } else { " L" },
                        px(i),
                        py(*c)
                    );
                    lower.push((px(i), py(*a)));
                }
            }
        }
        if lower.len() > 1 {
            for (x, y) in lower.iter().rev() {
                let _ = write!(upper, " L{x:.1},{y:.1}");
            }
            let _ = write!(
                s,
                r##"<path d="{upper} Z" fill="{c}" fill-opacity="0.18"/>"##,
                c = esc(self.color)
            );
        }
        let mut d = String::new();
        let mut pen = false;
        for (i, v) in self.values.iter().enumerate() {
            match v {
                Some(v) if v.is_finite() => {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1}",
                        if pen { " L" } else { " M" },
                        px(i),
                        py(*v)
                    );
                    pen = true;
                }
                _ => pen = false,
            }
        }
        if !d.is_empty() {
            let _ = write!(
                s,
                r##"<path d="{d}" fill="none" stroke="{c}" stroke-width="1.5"/>"##,
                c = esc(self.color)
            );
        }
        for (i, v) in self.values.iter().enumerate() {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                let changed = self.changed.contains(&i);
                let _ = write!(
                    s,
                    r##"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{f}" stroke="{st}" stroke-width="1"><title>{t}</title></circle>"##,
                    x = px(i),
                    y = py(v),
                    r = if changed { 3.6 } else { 2.2 },
                    f = if changed { "#d62728" } else { self.color },
                    st = if changed { "#7a0000" } else { "none" },
                    t = esc(self.tips.get(i).map(String::as_str).unwrap_or(""))
                );
            }
        }
        s.push_str("</svg>");
        s
    }
}
