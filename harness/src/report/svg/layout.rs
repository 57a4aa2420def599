//! Where a chart's text goes. Label extents are estimated from the font size (generous
//! per-character widths of a sans-serif face); ticks are thinned until their labels keep
//! apart; the left margin widens until the y-axis title clears the widest tick label; long
//! titles are shortened with an ellipsis (the full text stays in the SVG's `<title>`).

use super::*;

/// A text's box in the SVG's user units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextBox {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl TextBox {
    pub fn intersects(&self, other: &TextBox) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    pub fn inside(&self, width: f64, height: f64) -> bool {
        self.x0 >= 0.0 && self.y0 >= 0.0 && self.x1 <= width && self.y1 <= height
    }
}

/// Estimated advance width of `s` at `font` px. The widths are those of the widest common
/// sans-serif faces (DejaVu Sans, which headless Linux browsers fall back to): overestimating
/// costs a little room, underestimating lets labels collide.
pub fn text_width(s: &str, font: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' | 'i' | 'j' | 'l' | 'I' => 0.34,
            '(' | ')' | '[' | ']' | 'f' | 't' | 'r' | '/' | '-' => 0.42,
            'm' | 'w' | 'M' | 'W' | '@' | '%' | '—' | '…' | '≤' | '≥' => 1.0,
            c if c.is_ascii_uppercase() => 0.76,
            _ => 0.66,
        })
        .sum();
    em * font
}

/// Ascent and descent of a line of text as fractions of the font size (the font's own
/// metrics, which is what a browser's text box spans, not just the glyphs).
const ASCENT: f64 = 0.95;
const DESCENT: f64 = 0.25;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// One text of the chart, placed.
#[derive(Debug, Clone)]
pub struct Text {
    pub text: String,
    /// The anchor point (for a rotated text, its centre line's baseline point).
    pub x: f64,
    pub y: f64,
    pub font: f64,
    pub anchor: Anchor,
    /// Rotated by −90° about `(x, y)` (the y-axis title).
    pub rotated: bool,
    pub bold: bool,
    pub fill: &'static str,
}

impl Text {
    pub fn width(&self) -> f64 {
        text_width(&self.text, self.font) * if self.bold { 1.08 } else { 1.0 }
    }

    pub fn bbox(&self) -> TextBox {
        let w = self.width();
        let (a, b) = match self.anchor {
            Anchor::Start => (0.0, w),
            Anchor::Middle => (-w / 2.0, w / 2.0),
            Anchor::End => (-w, 0.0),
        };
        let (up, down) = (ASCENT * self.font, DESCENT * self.font);
        if self.rotated {
            // Reading upwards: the text runs along −y, its ascent points to −x.
            TextBox {
                x0: self.x - up,
                y0: self.y - b,
                x1: self.x + down,
                y1: self.y - a,
            }
        } else {
            TextBox {
                x0: self.x + a,
                y0: self.y - up,
                x1: self.x + b,
                y1: self.y + down,
            }
        }
    }

    pub fn svg(&self) -> String {
        let anchor = match self.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let place = if self.rotated {
            format!(
                r#"transform="translate({:.1} {:.1}) rotate(-90)""#,
                self.x, self.y
            )
        } else {
            format!(r#"x="{:.1}" y="{:.1}""#, self.x, self.y)
        };
        format!(
            r##"<text {place} font-size="{}" text-anchor="{anchor}" fill="{}"{}>{}</text>"##,
            self.font,
            self.fill,
            if self.bold {
                r#" font-weight="600""#
            } else {
                ""
            },
            esc(&self.text)
        )
    }
}

/// `s` shortened with an ellipsis to at most `max` px at `font` px.
pub fn fit_text(s: &str, font: f64, max: f64) -> String {
    if text_width(s, font) <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().collect();
    while !out.is_empty() && text_width(&format!("{out}…"), font) > max {
        out.pop();
    }
    format!("{}…", out.trim_end())
}

/// Every `k`-th item, `k` the smallest for which neighbouring extents (along the axis) keep
/// at least `gap` apart.
pub fn thin<T: Clone>(items: &[T], gap: f64, extent: impl Fn(&T) -> (f64, f64)) -> Vec<T> {
    for k in 1..=items.len().max(1) {
        let kept: Vec<T> = items.iter().step_by(k).cloned().collect();
        let apart = kept.windows(2).all(|w| {
            let ((a0, a1), (b0, b1)) = (extent(&w[0]), extent(&w[1]));
            (b0 - a1).max(a0 - b1) >= gap
        });
        if apart {
            return kept;
        }
    }
    items.iter().take(1).cloned().collect()
}

/// A chart's geometry and every text but the reference-line labels (which need the frame).
pub(super) struct Layout {
    pub frame: Frame,
    pub height: f64,
    /// Grid lines at every tick; labels only at the thinned ones, in `texts`.
    pub xticks: Vec<f64>,
    pub yticks: Vec<f64>,
    pub texts: Vec<Text>,
    /// Colour key entries: (series index, swatch x, baseline y).
    pub key: Vec<(usize, f64, f64)>,
}

/// Gap between a tick label and the frame, and between neighbouring labels.
const TICK_GAP: f64 = 4.0;
const LABEL_SPACE: f64 = 5.0;
/// Height of one row of the colour key.
const KEY_ROW: f64 = 16.0;
/// Swatch and padding of a key entry around its text.
const KEY_SWATCH: f64 = 24.0;
const KEY_PAD: f64 = 14.0;

impl Chart {
    /// The frame over the data (with headroom), the ticks, and every label placed so that none
    /// overlaps another or leaves the SVG.
    pub(super) fn layout(&self) -> Layout {
        let (xs, ys) = self.extent();
        let xs = match (xs, self.x_hint) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (None, h) => h,
            (x, None) => x,
        };
        let (xmin, xmax) = xs.unwrap_or((1.0, 2.0));
        let (ymin, ymax) = ys.unwrap_or((0.0, 1.0));
        let (xd, xticks) = axis(self.x_scale, xmin, xmax, false);
        let (yd, yticks) = axis(self.y_scale, ymin, ymax, self.y_zero);
        let y_labels: Vec<(f64, String)> = yticks
            .iter()
            .map(|&t| (t, axis_tick_label(self.y_scale, t)))
            .collect();
        let widest = y_labels
            .iter()
            .map(|(_, l)| text_width(l, 10.0))
            .fold(0.0, f64::max);
        // The y title's box (ascent + descent of 11 px) sits left of the widest tick label.
        let title_depth = (ASCENT + DESCENT) * 11.0;
        let ml = ML.max(2.0 + title_depth + LABEL_SPACE + widest + TICK_GAP);
        let ph = H - MT - MB;
        // The right margin holds the reference lines' labels whole, up to a third of the width.
        let widest_ref = self
            .hlines
            .iter()
            .filter(|h| valid(self.y_scale, h.y))
            .map(|h| text_width(&h.text, 9.5))
            .fold(0.0, f64::max);
        let mr = MR.max(widest_ref + 10.0).min(W / 3.0);
        let frame = Frame {
            x_scale: self.x_scale,
            y_scale: self.y_scale,
            x: padded(self.x_scale, xd),
            y: padded(self.y_scale, yd),
            ml,
            pw: W - ml - mr,
            ph,
        };
        let mut texts = Vec::new();
        // Y tick labels, thinned bottom to top.
        let y_placed: Vec<Text> = y_labels
            .iter()
            .map(|(t, l)| Text {
                text: l.clone(),
                x: ml - TICK_GAP,
                y: frame.py(*t) + 3.5,
                font: 10.0,
                anchor: Anchor::End,
                rotated: false,
                bold: false,
                fill: "#555",
            })
            .collect();
        texts.extend(thin(&y_placed, 1.0, |t| {
            let b = t.bbox();
            (b.y0, b.y1)
        }));
        // X tick labels, thinned left to right.
        let x_placed: Vec<Text> = xticks
            .iter()
            .map(|&t| Text {
                text: axis_tick_label(self.x_scale, t),
                x: frame.px(t),
                y: MT + ph + 13.0,
                font: 10.0,
                anchor: Anchor::Middle,
                rotated: false,
                bold: false,
                fill: "#555",
            })
            .collect();
        texts.extend(thin(&x_placed, LABEL_SPACE, |t| {
            let b = t.bbox();
            (b.x0, b.x1)
        }));
        // Title: over the frame when it fits there, else from the left edge.
        let title_room = W - ml - 4.0;
        let title_x = if text_width(&self.title, 12.0) * 1.08 <= title_room {
            ml
        } else {
            4.0
        };
        texts.push(Text {
            text: fit_text(&self.title, 12.0 * 1.08, W - title_x - 4.0),
            x: title_x,
            y: 16.0,
            font: 12.0,
            anchor: Anchor::Start,
            rotated: false,
            bold: true,
            fill: "#222",
        });
        let x_center = ml + frame.pw / 2.0;
        let x_room = 2.0 * x_center.min(W - x_center) - 4.0;
        texts.push(Text {
            text: fit_text(&self.x_label, 11.0, x_room),
            x: x_center,
            y: H - 8.0,
            font: 11.0,
            anchor: Anchor::Middle,
            rotated: false,
            bold: false,
            fill: "#333",
        });
        texts.push(Text {
            text: fit_text(&self.y_label, 11.0, ph),
            x: ml - TICK_GAP - widest - LABEL_SPACE - DESCENT * 11.0,
            y: MT + ph / 2.0,
            font: 11.0,
            anchor: Anchor::Middle,
            rotated: true,
            bold: false,
            fill: "#333",
        });
        if let Some(m) = &self.message {
            texts.push(Text {
                text: fit_text(m, 11.0, frame.pw - 8.0),
                x: x_center,
                y: MT + ph / 2.0,
                font: 11.0,
                anchor: Anchor::Middle,
                rotated: false,
                bold: false,
                fill: "#666",
            });
        }
        let (key, key_texts, height) = self.key_layout();
        texts.extend(key_texts);
        Layout {
            frame,
            height,
            xticks,
            yticks,
            texts,
            key,
        }
    }

    /// The colour key under the x-axis title: one entry per series with points, in rows.
    fn key_layout(&self) -> (Vec<(usize, f64, f64)>, Vec<Text>, f64) {
        if !self.key {
            return (Vec::new(), Vec::new(), H);
        }
        let (mut x, mut row) = (8.0, 0usize);
        let (mut key, mut texts) = (Vec::new(), Vec::new());
        for (i, s) in self.series.iter().enumerate() {
            if s.points.is_empty() {
                continue;
            }
            let text = fit_text(&s.name, 10.0, W - 16.0 - KEY_SWATCH - KEY_PAD);
            let w = KEY_SWATCH + text_width(&text, 10.0) + KEY_PAD;
            if x > 8.0 && x + w > W - 8.0 {
                x = 8.0;
                row += 1;
            }
            let y = H + 6.0 + row as f64 * KEY_ROW;
            key.push((i, x, y));
            texts.push(Text {
                text,
                x: x + KEY_SWATCH,
                y: y + 3.5,
                font: 10.0,
                anchor: Anchor::Start,
                rotated: false,
                bold: false,
                fill: "#333",
            });
            x += w;
        }
        let height = if key.is_empty() {
            H
        } else {
            H + 6.0 + (row + 1) as f64 * KEY_ROW
        };
        (key, texts, height)
    }

    /// The box of every text the chart draws (reference-line labels included), with its text.
    pub fn text_boxes(&self) -> (Vec<(String, TextBox)>, (f64, f64)) {
        let lay = self.layout();
        let mut out: Vec<(String, TextBox)> = lay
            .texts
            .iter()
            .map(|t| (t.text.clone(), t.bbox()))
            .collect();
        let refs = self.reference_labels(&lay.frame);
        for (y, _, h) in spread_labels(&refs, MT + 4.0, MT + lay.frame.ph - 4.0) {
            let t = reference_text(&lay.frame, y, h);
            out.push((t.text.clone(), t.bbox()));
        }
        (out, (W, lay.height))
    }
}

/// A reference line's label in the right margin, its baseline level with `y`.
pub(super) fn reference_text(f: &Frame, y: f64, h: &HLine) -> Text {
    let x = f.ml + f.pw + 6.0;
    Text {
        text: fit_text(&h.text, 9.5, W - x - 2.0),
        x,
        y: y + 3.3,
        font: 9.5,
        anchor: Anchor::Start,
        rotated: false,
        bold: false,
        fill: "",
    }
}

/// The axis range widened so that points at its ends do not sit on the frame.
fn padded(scale: Scale, (lo, hi): Range) -> Range {
    let pad = match scale {
        Scale::Linear => 0.04 * (hi - lo),
        Scale::Log2 => 0.15,
        // `axis` pads log10 ranges already.
        Scale::Log10 => 0.0,
    };
    (lo - pad, hi + pad)
}

/// A tick label; powers of two below ⅛ on a log2 axis as fractions (`1/32`, not `0.03125`).
pub fn axis_tick_label(scale: Scale, v: f64) -> String {
    if scale == Scale::Log2 && v > 0.0 && v < 0.125 {
        let inv = 1.0 / v;
        if (inv - inv.round()).abs() < 1e-9 * inv {
            return format!("1/{}", inv.round());
        }
    }
    tick_label(v)
}
