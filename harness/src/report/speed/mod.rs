//! "The price of speed": for a formal task whose suite varies the sampler's key/value `cache`
//! or a model's `block_size`, TER and SER (with their CIs) against tokens per second, NFE and
//! forward equivalents, one series per decoding configuration (model, sampler, cache, refresh,
//! block length), the exact oracle's series as the reference; the block-size curve from AR
//! (block size 1) to MDM (block size L); and a verdict comparing each AR cell with the fastest
//! diffusion configuration that reaches its SER.
//!
//! The configuration is read from what the model said it generated with (`settings`: the
//! sampler's resolved `params`, the model's `block_size`), else from the suite as written, so
//! runs of models that do not state their settings still group correctly.

use super::{anchor, fmt_num, replayed, Plot};
use crate::metrics::{is_ar_cell, CellSummary};
use crate::results::{CellRecord, CellStatus};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

mod plots;
#[cfg(test)]
mod tests;

/// The decoding configuration a cell ran with: the series it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Config {
    pub model: String,
    pub sampler: String,
    /// `none`, `prefix` or `dual`; `None` where the sampler names no cache (an AR model's
    /// sampler, or a run before samplers had one: no cache).
    pub cache: Option<String>,
    /// `every_block`, or a step count as text; `None` where the sampler names no rule.
    pub refresh: Option<String>,
    /// The sampler's semi-autoregressive block; `None`: one block over the whole sequence.
    pub block_length: Option<u64>,
    /// The model's block size (block diffusion), as its settings record it.
    pub block_size: Option<u64>,
    pub length: usize,
    pub seed: u64,
}

impl Config {
    /// The sampler reuses cached keys and values.
    pub fn cached(&self) -> bool {
        self.cache.as_deref().is_some_and(|c| c != "none")
    }

    /// The series label: model · sampler · cache · refresh · block, plus the length and seed
    /// where the task has several.
    pub fn label(&self, many_lengths: bool, many_seeds: bool) -> String {
        let mut parts = vec![self.model.clone(), self.sampler.clone()];
        match self.cache.as_deref() {
            Some("none") => parts.push("no cache".to_string()),
            Some(c) => parts.push(format!("{c} cache")),
            None => {}
        }
        if let Some(r) = self.refresh.as_ref().filter(|_| self.cached()) {
            parts.push(format!("refresh {r}"));
        }
        if let Some(b) = self.block_length {
            parts.push(format!("block {b}"));
        }
        if many_lengths {
            parts.push(format!("L={}", self.length));
        }
        if many_seeds {
            parts.push(format!("seed {}", self.seed));
        }
        parts.join(" · ")
    }
}

/// One cell of the section: its configuration, kind and figures.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedPoint {
    pub key: String,
    pub unit: String,
    pub series: String,
    pub config: Config,
    pub steps: Option<usize>,
    /// The model is the task's exact denoiser (the reference curve).
    pub exact: bool,
    /// An AR cell (an AR model, or a denoiser decoded left to right).
    pub ar: bool,
    pub ter: Option<f64>,
    pub ter_ci: Option<(f64, f64)>,
    pub ser: Option<f64>,
    pub ser_ci: Option<(f64, f64)>,
    pub nfe: Option<f64>,
    /// Positions computed per sample ÷ length; for a denoiser that does not count positions,
    /// its NFE (each of its calls was a full forward, the protocol's rule).
    pub forward_equivalents: Option<f64>,
    /// Whether `forward_equivalents` is that NFE fallback rather than a reported count.
    pub forward_equivalents_from_nfe: bool,
    pub tokens_per_second: Option<f64>,
    pub edits: Option<f64>,
}

/// The verdict for one AR cell: the fastest diffusion configuration at equal SER.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedVerdict {
    pub ar: String,
    pub ar_ser: Option<f64>,
    pub ar_ser_ci: Option<(f64, f64)>,
    pub ar_tokens_per_second: Option<f64>,
    /// The fastest diffusion configuration whose SER CI overlaps the AR cell's or lies below
    /// it; `None` when no configuration reaches it.
    pub best: Option<SpeedPoint>,
    /// `best`'s SER CI lies wholly below the AR cell's.
    pub better: bool,
    /// `best`'s tokens per second ÷ the AR cell's.
    pub speedup: Option<f64>,
    /// Diffusion configurations (cells) the AR cell was compared with.
    pub candidates: usize,
    /// The sentence the page shows.
    pub sentence: String,
}

/// The price-of-speed section of one task.
#[derive(Debug, Serialize)]
pub struct SpeedSection {
    pub task: String,
    pub anchor: String,
    /// Why the section is there: the caches and block sizes the task's cells ran with.
    pub caches: Vec<String>,
    pub block_sizes: Vec<u64>,
    pub points: Vec<SpeedPoint>,
    pub verdicts: Vec<SpeedVerdict>,
    /// Quality against tokens/s, NFE and forward equivalents.
    pub plots: Vec<Plot>,
    /// TER and SER against the model's block size.
    pub block_plots: Vec<Plot>,
    pub notes: Vec<String>,
}

impl SpeedSection {
    /// The JSON twin: everything but the SVG.
    pub fn twin(&self) -> Value {
        let plots = |ps: &[Plot]| -> Vec<Value> {
            ps.iter()
                .map(|p| serde_json::json!({"title": p.title, "drawn": p.svg.is_some(), "note": p.note}))
                .collect()
        };
        serde_json::json!({
            "task": self.task,
            "caches": self.caches,
            "block_sizes": self.block_sizes,
            "points": self.points,
            "verdicts": self.verdicts,
            "plots": plots(&self.plots),
            "block_plots": plots(&self.block_plots),
            "notes": self.notes,
        })
    }
}

/// A sampler parameter as the model stated it (its resolved settings), else as the suite gave
/// it; `None` when neither names it or it is `null`.
fn sampler_param<'c>(cell: &'c CellRecord, name: &str) -> Option<&'c Value> {
    let stated = cell
        .settings
        .as_ref()
        .and_then(|s| s.get("sampler")?.get("params")?.get(name));
    let given = cell.cell.sampler.as_ref().and_then(|s| s.params.get(name));
    stated.or(given).filter(|v| !v.is_null())
}

/// The model's block size as its settings record it, else as the suite's config gives it.
fn block_size(cell: &CellRecord) -> Option<u64> {
    let stated = cell
        .settings
        .as_ref()
        .and_then(|s| s.get("model")?.get("block_size"));
    let given = cell
        .cell
        .model
        .as_ref()
        .and_then(|m| m.config.get("block_size"));
    stated.or(given).and_then(Value::as_u64)
}

fn refresh_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.replace('_', " "),
        Value::Number(k) => format!("every {k} steps"),
        other => other.to_string(),
    }
}

/// The configuration of a model cell.
pub fn config_of(cell: &CellRecord, s: &CellSummary) -> Config {
    Config {
        model: s.model.clone(),
        sampler: s.sampler.clone().unwrap_or_default(),
        cache: sampler_param(cell, "cache")
            .and_then(Value::as_str)
            .map(str::to_string),
        refresh: sampler_param(cell, "refresh").map(refresh_text),
        block_length: sampler_param(cell, "block_length").and_then(Value::as_u64),
        block_size: block_size(cell),
        length: s.length,
        seed: s.seed,
    }
}

/// Forward equivalents of a cell, and whether they are its NFE standing in for an uncounted
/// full forward per call. An AR model that does not count positions is left out: its calls
/// take one new position each, not the whole sequence.
fn forward_equivalents(s: &CellSummary, ar_model: bool) -> (Option<f64>, bool) {
    match s.forward_equivalents {
        Some(f) => (Some(f), false),
        None if !ar_model => (s.nfe, s.nfe.is_some()),
        None => (None, false),
    }
}

/// The section for `task`, or `None` when its cells neither vary the cache nor the model's
/// block size.
pub fn section(task: &str, cells: &[CellRecord], summary: &[CellSummary]) -> Option<SpeedSection> {
    let record: HashMap<&str, &CellRecord> = cells.iter().map(|c| (c.unit.as_str(), c)).collect();
    let rows: Vec<(&CellSummary, &CellRecord)> = summary
        .iter()
        .filter(|s| s.task == task && s.model != "reference" && s.status == CellStatus::Ok)
        .filter(|s| !replayed(s))
        .filter_map(|s| Some((s, *record.get(s.unit.as_str())?)))
        .collect();
    // Text tasks have no exact TER or SER to price speed in.
    let text = rows.iter().any(|(_, c)| {
        c.task_description
            .as_ref()
            .is_some_and(|d| d.text.is_some())
    });
    let configs: Vec<Config> = rows.iter().map(|(s, c)| config_of(c, s)).collect();
    let caches: BTreeSet<String> = configs
        .iter()
        .map(|c| c.cache.clone().unwrap_or_else(|| "none".into()))
        .collect();
    let block_sizes: BTreeSet<u64> = configs.iter().filter_map(|c| c.block_size).collect();
    let varies_cache = caches.len() > 1 || configs.iter().any(Config::cached);
    if text || !(varies_cache || block_sizes.len() > 1) {
        return None;
    }
    let many_lengths = configs
        .iter()
        .map(|c| c.length)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let many_seeds = configs
        .iter()
        .map(|c| c.seed)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let points: Vec<SpeedPoint> = rows
        .iter()
        .zip(configs)
        .map(|((s, c), config)| {
            let (fe, from_nfe) = forward_equivalents(s, c.model_autoregressive);
            SpeedPoint {
                key: s.key.clone(),
                unit: s.unit.clone(),
                series: config.label(many_lengths, many_seeds),
                config,
                steps: s.steps,
                exact: c.model_exact,
                ar: is_ar_cell(c),
                ter: s.ter,
                ter_ci: s.ter_ci,
                ser: s.ser,
                ser_ci: s.ser_ci,
                nfe: s.nfe,
                forward_equivalents: fe,
                forward_equivalents_from_nfe: from_nfe,
                tokens_per_second: s.tokens_per_second,
                edits: s.edits,
            }
        })
        .collect();
    let verdicts = verdicts(&points);
    let optimal_ter = summary
        .iter()
        .filter(|s| s.task == task)
        .find_map(|s| s.optimal_ter);
    let (plots, mut notes) = plots::quality_plots(task, &points, optimal_ter);
    let block_plots = plots::block_plots(task, &points, optimal_ter);
    if points.iter().all(|p| p.ser == Some(0.0)) {
        notes.push("SER is 0 in every cell (every sequence of this language is possible), so equal SER says nothing here: read the verdict with the TER charts.".into());
    }
    if points.iter().any(|p| p.forward_equivalents_from_nfe) {
        notes.push("Forward equivalents = positions computed per sample ÷ length; cells whose model does not count positions are placed at their NFE (each call a full forward pass).".into());
    }
    Some(SpeedSection {
        task: task.to_string(),
        anchor: format!("{}-speed", anchor(task)),
        caches: caches.into_iter().collect(),
        block_sizes: block_sizes.into_iter().collect(),
        points,
        verdicts,
        plots,
        block_plots,
        notes,
    })
}

/// One verdict per AR cell that is not the exact oracle: among the diffusion cells of its
/// length and seed (not the oracle either: it is the reference, not a contender), the fastest
/// whose SER CI overlaps the AR cell's or lies below it.
pub fn verdicts(points: &[SpeedPoint]) -> Vec<SpeedVerdict> {
    points
        .iter()
        .filter(|a| a.ar && !a.exact)
        .map(|a| {
            let candidates: Vec<&SpeedPoint> = points
                .iter()
                .filter(|p| !p.ar && !p.exact)
                .filter(|p| p.config.length == a.config.length && p.config.seed == a.config.seed)
                .collect();
            verdict(a, &candidates)
        })
        .collect()
}

/// The verdict rule for one AR cell against its candidates.
pub fn verdict(ar: &SpeedPoint, candidates: &[&SpeedPoint]) -> SpeedVerdict {
    let reaches = |p: &&&SpeedPoint| match (p.ser_ci, ar.ser_ci) {
        (Some((lo, _)), Some((_, ar_hi))) => lo <= ar_hi,
        _ => false,
    };
    let best = candidates
        .iter()
        .filter(reaches)
        .filter(|p| p.tokens_per_second.is_some())
        .max_by(|a, b| {
            a.tokens_per_second
                .partial_cmp(&b.tokens_per_second)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|p| (*p).clone());
    let better = best
        .as_ref()
        .and_then(|b| Some(b.ser_ci?.1 < ar.ser_ci?.0))
        .unwrap_or(false);
    let speedup = best
        .as_ref()
        .and_then(|b| Some(b.tokens_per_second? / ar.tokens_per_second.filter(|t| *t > 0.0)?));
    let ci = |p: &SpeedPoint| {
        format!(
            "SER {}{}",
            fmt_num(p.ser, 3),
            p.ser_ci
                .map(|(lo, hi)| format!(" [{}, {}]", fmt_num(Some(lo), 3), fmt_num(Some(hi), 3)))
                .unwrap_or_default()
        )
    };
    let sentence = match &best {
        Some(b) => format!(
            "{}{} {} AR's SER ({} against {}) at {} tokens/s: {}× the AR cell's {} tokens/s.",
            b.series,
            b.steps
                .map(|s| format!(" at {s} steps"))
                .unwrap_or_default(),
            if better { "beats" } else { "matches" },
            ci(b),
            ci(ar),
            fmt_num(b.tokens_per_second, 0),
            fmt_num(speedup, 2),
            fmt_num(ar.tokens_per_second, 0),
        ),
        None => {
            let lowest = candidates
                .iter()
                .filter(|p| p.ser.is_some())
                .min_by(|a, b| {
                    a.ser
                        .partial_cmp(&b.ser)
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
            match lowest {
                Some(l) => {
                    format!(
                    "none: no diffusion configuration reaches AR's {} (the lowest is {}, {}{}).",
                    ci(ar),
                    ci(l),
                    l.series,
                    l.steps.map(|s| format!(" at {s} steps")).unwrap_or_default()
                )
                }
                None => "none: no diffusion cell of this length and seed to compare.".to_string(),
            }
        }
    };
    SpeedVerdict {
        ar: ar.series.clone(),
        ar_ser: ar.ser,
        ar_ser_ci: ar.ser_ci,
        ar_tokens_per_second: ar.tokens_per_second,
        best,
        better,
        speedup,
        candidates: candidates.len(),
        sentence,
    }
}
