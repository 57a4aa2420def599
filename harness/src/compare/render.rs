//! A comparison as HTML (with its JSON twin), as text for the terminal, and the new run in
//! Bencher Metric Format.

use super::{Comparison, Row, RunData, Status, EXIT_REGRESSION};
use crate::report::{self, fmt_num};
use crate::results::CellStatus;
use anyhow::{Context, Result};

impl Comparison {
    pub fn exit_code(&self) -> u8 {
        if self.regressions > 0 {
            EXIT_REGRESSION
        } else {
            0
        }
    }

    pub fn render_html(&self) -> Result<String> {
        let changed: Vec<&Row> = self.rows.iter().filter(|r| r.status.is_change()).collect();
        let flips: Vec<&Row> = self.rows.iter().filter(|r| !r.flips.is_empty()).collect();
        let counts: Vec<(&str, String, usize)> = Status::ALL
            .iter()
            .filter_map(|s| {
                self.counts.get(s.label()).map(|k| {
                    (
                        s.label(),
                        serde_json::to_value(s)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        *k,
                    )
                })
            })
            .collect();
        report::environment()?
            .get_template("compare.html")?
            .render(minijinja::context! {
                c => self,
                changed => changed,
                flips => flips,
                counts => counts,
            })
            .context("cannot render the comparison")
    }

    /// Bencher Metric Format of the new run: `{cell key: {measure: {value, lower_value, upper_value}}}`.
    pub fn bmf(new: &RunData) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for s in new.summary.iter().filter(|s| s.status == CellStatus::Ok) {
            let mut m = serde_json::Map::new();
            let mut put = |name: &str, v: Option<f64>, ci: Option<(f64, f64)>| {
                if let Some(v) = v.filter(|v| v.is_finite()) {
                    let mut e = serde_json::Map::new();
                    e.insert("value".into(), v.into());
                    if let Some((lo, hi)) = ci {
                        e.insert("lower_value".into(), lo.into());
                        e.insert("upper_value".into(), hi.into());
                    }
                    m.insert(name.into(), e.into());
                }
            };
            put("ter", s.ter, s.ter_ci);
            put("ser", s.ser, s.ser_ci);
            put("nfe", s.nfe, None);
            put("tokens-per-second", s.tokens_per_second, None);
            put("unigram-entropy", s.unigram_entropy, None);
            put("speedup", s.speedup, None);
            out.insert(s.key.clone(), m.into());
        }
        out.into()
    }

    /// The plain-text summary `compare` prints.
    pub fn text(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "base: {} ({} cells)\nnew:  {} ({} cells)\n",
            self.base.dir.display(),
            self.base.cells,
            self.new.dir.display(),
            self.new.cells
        ));
        for b in &self.banners {
            s.push_str(&format!("NOT COMPARABLE: {b}\n"));
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        s.push_str(&format!("rows: {}\n", counts.join(", ")));
        // Timing noise is one line, never one row each.
        s.push_str(&format!("timing: {}\n", self.timing.line));
        for r in self.rows.iter().filter(|r| r.status.is_change()) {
            if r.metric == "cell" {
                s.push_str(&format!(
                    "  {:<26} {}{}\n",
                    r.status_label,
                    r.key,
                    r.note
                        .as_ref()
                        .map(|n| format!(" — {}", n.lines().next().unwrap_or("")))
                        .unwrap_or_default()
                ));
            } else {
                s.push_str(&format!(
                    "  {:<26} {} {}: {} → {} (Δ {}{}){}\n",
                    r.status_label,
                    r.key,
                    r.metric,
                    fmt_num(r.base, r.digits),
                    fmt_num(r.new, r.digits),
                    match r.delta {
                        Some(d) if d.is_finite() => format!("{d:+.*}", r.digits),
                        Some(d) if d > 0.0 => "+∞".into(),
                        Some(_) => "−∞".into(),
                        None => "—".into(),
                    },
                    r.ci.map(|(lo, hi)| format!(
                        ", 95% CI [{lo:+.*}, {hi:+.*}]",
                        r.digits, r.digits
                    ))
                    .unwrap_or_default(),
                    r.note
                        .as_ref()
                        .map(|n| format!(" — {n}"))
                        .unwrap_or_default()
                ));
            }
        }
        if self.regressions > 0 {
            s.push_str(&format!(
                "{} regression(s): exit code {EXIT_REGRESSION}\n",
                self.regressions
            ));
        } else {
            s.push_str("no regressions\n");
        }
        s
    }
}
