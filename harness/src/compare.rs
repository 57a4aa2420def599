//! `dlm-bench compare BASE NEW`: per cell and metric, the baseline, the candidate, the delta and
//! the 95% CI of the delta, with a status in asv/criterion vocabulary, sorted by severity.
//!
//! * Cells are matched by unit id (the content hash of everything that determines a cell's
//!   samples); cells whose unit changed but whose key (`task/model/sampler@steps/L/seed`) is the
//!   same are matched by key and compared unpaired.
//! * Quality (TER, SER, unigram entropy) and NFE are compared **paired per sample** when the unit
//!   is the same: sample `i` of both runs came from the same random stream, so the per-sample
//!   differences are resampled together (paired bootstrap over sequences). Identical samples give
//!   a delta of exactly 0 ("identical": the same samples, so no noise to speak of).
//! * Timing (tokens/s) is never paired and never "identical". Each batch of a cell is a repeated
//!   measurement of the same work (the first, a warm-up, is not timed); asv's rule judges it: the
//!   ratio of median batch throughputs must pass a threshold (the noise floor or the runs' own
//!   spread, whichever is larger) *and* a Mann–Whitney test must find the batches different.
//! * A cell whose task or model plugin version changed is "not comparable" (asv's `x`).
//!
//! The exit code is [`EXIT_REGRESSION`] when any row regressed or newly failed.

use crate::metrics::{self, CellSummary, Clock};
use crate::registry::{self, Aggregate};
use crate::report::{self, fmt_num};
use crate::results::{write_atomic, CellRecord, CellStatus, Manifest, RunDir, SampleRecord};
use crate::stats;
use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Exit code of `compare` when something regressed (or a cell newly failed).
pub const EXIT_REGRESSION: u8 = 4;

/// Default relative noise floor for timings (±10%).
pub const DEFAULT_TIMING_NOISE: f64 = 0.10;

/// Smallest relative TER / NFE change that counts, even when significant.
const MIN_REL_CHANGE: f64 = 0.005;
/// Smallest absolute change of a rate (SER, accuracy…) that counts, even when significant.
const MIN_ABS_RATE_CHANGE: f64 = 0.005;
/// A rate change at least this large that is not significant is `changed_not_significant`.
const LARGE_ABS_RATE_CHANGE: f64 = 0.05;
/// A change larger than this (relative; SER: absolute 0.05) that is not significant is flagged
/// as `changed_not_significant` (asv's `~`) instead of hiding in "within noise".
const LARGE_REL_CHANGE: f64 = 0.10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    NewFailure,
    Regressed,
    NotComparable,
    Removed,
    ChangedNotSignificant,
    StillFailing,
    Improved,
    Fixed,
    Changed,
    Added,
    WithinNoise,
    Identical,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::NewFailure => "new failure",
            Status::Regressed => "regressed",
            Status::NotComparable => "not comparable",
            Status::Removed => "removed",
            Status::ChangedNotSignificant => "~ large, not significant",
            Status::StillFailing => "still failing",
            Status::Improved => "improved",
            Status::Fixed => "fixed",
            Status::Changed => "changed",
            Status::Added => "added",
            Status::WithinNoise => "within noise",
            Status::Identical => "identical",
        }
    }
    pub fn gates(self) -> bool {
        matches!(self, Status::Regressed | Status::NewFailure)
    }
    pub fn is_change(self) -> bool {
        !matches!(self, Status::WithinNoise | Status::Identical)
    }
    pub const ALL: [Status; 12] = [
        Status::NewFailure,
        Status::Regressed,
        Status::NotComparable,
        Status::Removed,
        Status::ChangedNotSignificant,
        Status::StillFailing,
        Status::Improved,
        Status::Fixed,
        Status::Changed,
        Status::Added,
        Status::WithinNoise,
        Status::Identical,
    ];
}

pub use crate::registry::Better;

/// A sample whose membership in the language flipped from in to out.
#[derive(Debug, Clone, Serialize)]
pub struct Flip {
    pub index: u64,
    pub base_tokens: String,
    pub new_tokens: String,
    pub new_first_invalid: Option<usize>,
}

/// One row: a cell-level event (metric `cell`) or one metric of a matched cell.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub status: Status,
    pub status_label: &'static str,
    pub key: String,
    pub unit: String,
    pub task: String,
    pub model: String,
    pub sampler: Option<String>,
    pub steps: Option<usize>,
    pub length: usize,
    pub seed: u64,
    pub metric: String,
    pub better: Option<Better>,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// `new − base`.
    pub delta: Option<f64>,
    /// `new / base − 1`.
    pub rel: Option<f64>,
    /// 95% CI of `delta`.
    pub ci: Option<(f64, f64)>,
    /// 95% CI of `rel` (timings).
    pub rel_ci: Option<(f64, f64)>,
    pub n_base: usize,
    pub n_new: usize,
    /// How the CI was computed.
    pub method: String,
    /// Whether the samples were paired (same unit and sample index).
    pub paired: bool,
    pub digits: usize,
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flips: Vec<Flip>,
}

/// The rules the statuses follow, recorded in the JSON twin.
#[derive(Debug, Clone, Serialize)]
pub struct Rules {
    pub confidence: f64,
    pub bootstrap_resamples: usize,
    pub timing_noise: f64,
    pub min_rel_change: f64,
    pub min_abs_ser_change: f64,
    pub large_rel_change: f64,
    pub text: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSide {
    pub dir: PathBuf,
    pub identity: serde_json::Value,
    pub cells: usize,
    pub failed: usize,
}

/// A whole comparison (also the JSON twin).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub format: &'static str,
    pub base: RunSide,
    pub new: RunSide,
    /// Reasons the runs are not fully comparable (suite, plugin versions, device).
    pub banners: Vec<String>,
    /// Facts about the pair that are not problems (e.g. the commit changed).
    pub notes: Vec<String>,
    pub counts: BTreeMap<&'static str, usize>,
    pub regressions: usize,
    pub only_changed: bool,
    pub rules: Rules,
    /// Sorted by severity.
    pub rows: Vec<Row>,
}

pub struct Options {
    pub timing_noise: f64,
    pub only_changed: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timing_noise: DEFAULT_TIMING_NOISE,
            only_changed: false,
        }
    }
}

/// One run directory, loaded.
pub struct RunData {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub cells: Vec<CellRecord>,
    pub summary: Vec<CellSummary>,
    /// Samples by unit, sorted by index.
    pub samples: HashMap<String, Vec<SampleRecord>>,
}

pub fn load_run(path: &Path) -> Result<RunData> {
    let dir = RunDir::open_read_only(path)?;
    let manifest = dir.read_manifest()?;
    let (cells, samples) = dir.load_consistent()?;
    let summary = metrics::summarize(&cells, &samples);
    let mut by_unit: HashMap<String, Vec<SampleRecord>> = HashMap::new();
    for s in samples {
        by_unit.entry(s.unit.clone()).or_default().push(s);
    }
    for v in by_unit.values_mut() {
        v.sort_by_key(|s| s.index);
    }
    Ok(RunData {
        dir: path.to_owned(),
        manifest,
        cells,
        summary,
        samples: by_unit,
    })
}

fn side(r: &RunData) -> RunSide {
    RunSide {
        dir: r.dir.clone(),
        identity: report::identity(&r.manifest),
        cells: r.cells.len(),
        failed: r
            .cells
            .iter()
            .filter(|c| c.status == CellStatus::Failed)
            .count(),
    }
}

/// Compare two loaded runs.
pub fn compare(base: &RunData, new: &RunData, opts: &Options) -> Comparison {
    let mut banners = Vec::new();
    let mut notes = Vec::new();
    let (bm, nm) = (&base.manifest, &new.manifest);
    if bm.suite_hash != nm.suite_hash {
        banners.push(format!(
            "The suites differ ({} sha256 {} vs {} sha256 {}): only cells present in both runs are compared.",
            bm.suite_path.display(),
            &bm.suite_hash[..12.min(bm.suite_hash.len())],
            nm.suite_path.display(),
            &nm.suite_hash[..12.min(nm.suite_hash.len())]
        ));
    }
    for p in &nm.plugins {
        match bm.plugins.iter().find(|o| o.name == p.name) {
            Some(o) if o.version != p.version => banners.push(format!(
                "Plugin {} changed version ({} → {}): its cells are not comparable.",
                p.name, o.version, p.version
            )),
            Some(o) if o.api_version != p.api_version => notes.push(format!(
                "Plugin {} was built against plugin API {} then, {} now.",
                p.name, o.api_version, p.api_version
            )),
            _ => {}
        }
    }
    if bm.device != nm.device || bm.host != nm.host || bm.cpus != nm.cpus {
        banners.push(format!(
            "Different testbeds ({} on {} with {} CPUs vs {} on {} with {} CPUs): timing changes reflect the machine as much as the code.",
            bm.device, bm.host, bm.cpus, nm.device, nm.host, nm.cpus
        ));
    }
    if bm.git_commit != nm.git_commit {
        notes.push(format!(
            "Commit {} → {}.",
            bm.git_commit.as_deref().unwrap_or("unknown"),
            nm.git_commit.as_deref().unwrap_or("unknown")
        ));
    }
    if nm.git_dirty == Some(true) || bm.git_dirty == Some(true) {
        notes
            .push("At least one run was made from a working tree with uncommitted changes.".into());
    }

    let b_rec: HashMap<&str, &CellRecord> =
        base.cells.iter().map(|c| (c.unit.as_str(), c)).collect();
    let n_rec: HashMap<&str, &CellRecord> =
        new.cells.iter().map(|c| (c.unit.as_str(), c)).collect();
    let n_by_unit: HashMap<&str, &CellSummary> =
        new.summary.iter().map(|s| (s.unit.as_str(), s)).collect();
    let n_by_key: HashMap<&str, &CellSummary> =
        new.summary.iter().map(|s| (s.key.as_str(), s)).collect();
    let mut matched_new: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut rows = Vec::new();
    let empty: Vec<SampleRecord> = Vec::new();

    for b in &base.summary {
        let (n, same_unit) = match n_by_unit.get(b.unit.as_str()) {
            Some(n) => (*n, true),
            None => match n_by_key.get(b.key.as_str()) {
                Some(n) if !matched_new.contains(n.unit.as_str()) => (*n, false),
                _ => {
                    rows.push(cell_row(
                        b,
                        Status::Removed,
                        Some("not in the new run".into()),
                    ));
                    continue;
                }
            },
        };
        matched_new.insert(n.unit.as_str());
        match (b.status, n.status) {
            (CellStatus::Failed, CellStatus::Failed) => {
                rows.push(cell_row(n, Status::StillFailing, n.cause.clone()));
                continue;
            }
            (CellStatus::Ok, CellStatus::Failed) => {
                rows.push(cell_row(n, Status::NewFailure, n.cause.clone()));
                continue;
            }
            (CellStatus::Failed, CellStatus::Ok) => {
                rows.push(cell_row(
                    n,
                    Status::Fixed,
                    b.cause.as_ref().map(|c| format!("failed before: {c}")),
                ));
                continue;
            }
            (CellStatus::Ok, CellStatus::Ok) => {}
        }
        let (Some(brec), Some(nrec)) = (b_rec.get(b.unit.as_str()), n_rec.get(n.unit.as_str()))
        else {
            continue;
        };
        let mut version_note = Vec::new();
        if brec.task_plugin != nrec.task_plugin {
            version_note.push(format!(
                "task plugin {} → {}",
                plugin_label(&brec.task_plugin),
                plugin_label(&nrec.task_plugin)
            ));
        }
        if brec.model_plugin != nrec.model_plugin {
            version_note.push(format!(
                "model plugin {} → {}",
                plugin_label(&brec.model_plugin),
                plugin_label(&nrec.model_plugin)
            ));
        }
        let bs = base.samples.get(&b.unit).unwrap_or(&empty);
        let ns = new.samples.get(&n.unit).unwrap_or(&empty);
        let mut cell_rows = metric_rows(b, n, brec, nrec, bs, ns, same_unit, opts);
        if !version_note.is_empty() {
            for r in &mut cell_rows {
                r.status = Status::NotComparable;
                r.status_label = Status::NotComparable.label();
                r.note = Some(version_note.join("; "));
            }
        }
        rows.extend(cell_rows);
    }
    for n in &new.summary {
        if !matched_new.contains(n.unit.as_str()) {
            rows.push(cell_row(n, Status::Added, n.cause.clone()));
        }
    }

    rows.sort_by(|a, b| {
        a.status.cmp(&b.status).then_with(|| {
            let sa = a.rel.map(f64::abs).unwrap_or(0.0);
            let sb = b.rel.map(f64::abs).unwrap_or(0.0);
            sb.total_cmp(&sa).then_with(|| a.key.cmp(&b.key))
        })
    });
    let mut counts = BTreeMap::new();
    for s in Status::ALL {
        let k = rows.iter().filter(|r| r.status == s).count();
        if k > 0 {
            counts.insert(s.label(), k);
        }
    }
    let regressions = rows.iter().filter(|r| r.status.gates()).count();
    if opts.only_changed {
        rows.retain(|r| r.status.is_change());
    }
    Comparison {
        format: "dlm-bench compare 1",
        base: side(base),
        new: side(new),
        banners,
        notes,
        counts,
        regressions,
        only_changed: opts.only_changed,
        rules: Rules {
            confidence: 0.95,
            bootstrap_resamples: metrics::BOOTSTRAP_RESAMPLES,
            timing_noise: opts.timing_noise,
            min_rel_change: MIN_REL_CHANGE,
            min_abs_ser_change: MIN_ABS_RATE_CHANGE,
            large_rel_change: LARGE_REL_CHANGE,
            text: vec![
                "TER, SER, NFE and unigram entropy: 95% CI of new − base by bootstrap over sequences, paired per sample (same unit and sample index) when the cell's unit is unchanged, unpaired otherwise.".into(),
                format!("Regressed / improved: the CI excludes 0 on the worse / better side and the change is at least {:.1}% (SER: {} absolute). Identical samples: identical (never \"within noise\").", MIN_REL_CHANGE * 100.0, MIN_ABS_RATE_CHANGE),
                format!("A change of more than {:.0}% (SER: 0.05) whose CI includes 0 is '~ large, not significant'; it does not gate.", LARGE_REL_CHANGE * 100.0),
                format!("tokens/s: each batch of a cell is one repeated measurement (the first is a warm-up and not timed). Regressed / improved only when the ratio of median batch throughputs is beyond the threshold — the larger of the noise floor (±{:.0}%) and either run's own spread (IQR / median) — and a Mann–Whitney U test finds the batches different at {:.0}%. Cells with fewer than {} timed batches on a side are not judged.", opts.timing_noise * 100.0, TIMING_ALPHA * 100.0, MIN_TIMED_BATCHES),
                "Not comparable: the cell's task or model plugin version differs (figures shown, never gated). Exit code 4 when any row is regressed or a new failure.".into(),
            ],
        },
        rows,
    }
}

fn plugin_label(p: &Option<crate::results::PluginId>) -> String {
    p.as_ref()
        .map(|p| format!("{} {}", p.name, p.version))
        .unwrap_or_else(|| "none".into())
}

fn cell_row(s: &CellSummary, status: Status, note: Option<String>) -> Row {
    Row {
        status,
        status_label: status.label(),
        key: s.key.clone(),
        unit: s.unit.clone(),
        task: s.task.clone(),
        model: s.model.clone(),
        sampler: s.sampler.clone(),
        steps: s.steps,
        length: s.length,
        seed: s.seed,
        metric: "cell".into(),
        better: None,
        base: None,
        new: None,
        delta: None,
        rel: None,
        ci: None,
        rel_ci: None,
        n_base: 0,
        n_new: s.n,
        method: String::new(),
        paired: false,
        digits: 4,
        note,
        flips: Vec::new(),
    }
}

fn seed_of(unit: &str, metric: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in unit.bytes().chain(metric.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Percentile bootstrap 95% CI of `stat(base indices, new indices)`. Paired: one index draw
/// serves both sides (`nb == nn`). Non-finite statistics are dropped.
fn bootstrap(
    nb: usize,
    nn: usize,
    paired: bool,
    seed: u64,
    stat: impl Fn(&[usize], &[usize]) -> f64,
) -> Option<(f64, f64)> {
    if nb == 0 || nn == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ib = vec![0usize; nb];
    let mut inn = vec![0usize; nn];
    let mut samples = Vec::with_capacity(metrics::BOOTSTRAP_RESAMPLES);
    for _ in 0..metrics::BOOTSTRAP_RESAMPLES {
        for x in ib.iter_mut() {
            *x = rng.random_range(0..nb);
        }
        let v = if paired {
            stat(&ib, &ib)
        } else {
            for x in inn.iter_mut() {
                *x = rng.random_range(0..nn);
            }
            stat(&ib, &inn)
        };
        if v.is_finite() {
            samples.push(v);
        }
    }
    if samples.len() < metrics::BOOTSTRAP_RESAMPLES / 2 {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    Some((
        stats::quantile(&samples, 0.025),
        stats::quantile(&samples, 0.975),
    ))
}

/// Tokens separated by spaces (single digits would otherwise run together).
fn tokens_string(t: &[u32]) -> String {
    let parts: Vec<String> = t.iter().map(|x| x.to_string()).collect();
    parts.join(" ")
}

#[allow(clippy::too_many_arguments)]
fn metric_rows(
    b: &CellSummary,
    n: &CellSummary,
    brec: &CellRecord,
    nrec: &CellRecord,
    bs: &[SampleRecord],
    ns: &[SampleRecord],
    same_unit: bool,
    opts: &Options,
) -> Vec<Row> {
    // Pair samples by index when the unit is the same.
    let (bv, nv, paired): (Vec<&SampleRecord>, Vec<&SampleRecord>, bool) = if same_unit {
        let by_index: HashMap<u64, &SampleRecord> = ns.iter().map(|s| (s.index, s)).collect();
        let pairs: Vec<(&SampleRecord, &SampleRecord)> = bs
            .iter()
            .filter_map(|s| by_index.get(&s.index).map(|t| (s, *t)))
            .collect();
        if !pairs.is_empty() && pairs.len() == bs.len() && pairs.len() == ns.len() {
            (
                pairs.iter().map(|p| p.0).collect(),
                pairs.iter().map(|p| p.1).collect(),
                true,
            )
        } else {
            (bs.iter().collect(), ns.iter().collect(), false)
        }
    } else {
        (bs.iter().collect(), ns.iter().collect(), false)
    };
    let method = if paired {
        format!("paired bootstrap over {} samples", bv.len())
    } else {
        format!("unpaired bootstrap ({} vs {} samples)", bv.len(), nv.len())
    };
    let template = |metric: &str, better: Better, digits: usize| Row {
        status: Status::WithinNoise,
        status_label: Status::WithinNoise.label(),
        key: n.key.clone(),
        unit: n.unit.clone(),
        task: n.task.clone(),
        model: n.model.clone(),
        sampler: n.sampler.clone(),
        steps: n.steps,
        length: n.length,
        seed: n.seed,
        metric: metric.to_string(),
        better: Some(better),
        base: None,
        new: None,
        delta: None,
        rel: None,
        ci: None,
        rel_ci: None,
        n_base: bv.len(),
        n_new: nv.len(),
        method: method.clone(),
        paired,
        digits,
        note: None,
        flips: Vec::new(),
    };
    let seed = |m: &str| seed_of(&n.unit, m);
    let mut out = Vec::new();

    // TER.
    {
        let mut row = template("TER", Better::Lower, 4);
        row.base = b.ter;
        row.new = n.ter;
        let (bz, nz) = (b.zero_probability_samples, n.zero_probability_samples);
        match (b.ter, n.ter) {
            (Some(bt), Some(nt)) => {
                let ter_of = |v: &[&SampleRecord], idx: &[usize]| -> f64 {
                    let (mut lq, mut len) = (0.0, 0usize);
                    for &i in idx {
                        lq += v[i].log_q.unwrap_or(f64::NEG_INFINITY);
                        len += v[i].tokens.len();
                    }
                    (-lq / len.max(1) as f64).exp()
                };
                let identical = paired && bv.iter().zip(&nv).all(|(x, y)| x.log_q == y.log_q);
                let ci = if identical {
                    Some((0.0, 0.0))
                } else {
                    bootstrap(bv.len(), nv.len(), paired, seed("TER"), |ib, inn| {
                        ter_of(&nv, inn) - ter_of(&bv, ib)
                    })
                };
                judge(
                    &mut row,
                    bt,
                    nt,
                    ci,
                    identical,
                    MIN_REL_CHANGE * bt.abs(),
                    false,
                );
            }
            (Some(bt), None) => {
                row.new = Some(f64::INFINITY);
                row.delta = Some(f64::INFINITY);
                row.rel = Some(f64::INFINITY);
                row.status = Status::Regressed;
                let _ = bt;
                row.note = Some(format!("became infinite: {nz}/{} samples with q = 0", n.n));
            }
            (None, Some(_)) => {
                row.base = Some(f64::INFINITY);
                row.delta = Some(f64::NEG_INFINITY);
                row.rel = Some(-1.0);
                row.status = Status::Improved;
                row.note = Some(format!(
                    "became finite (base: {bz}/{} samples with q = 0)",
                    b.n
                ));
            }
            // Infinite in both runs: SER carries the comparison.
            (None, None) => row.status = Status::Identical,
        }
        row.status_label = row.status.label();
        if !(b.ter.is_none() && n.ter.is_none()) {
            out.push(row);
        }
    }
    // Every per-sample metric of the registry (SER, NFE, unigram entropy and whatever the task
    // declares): the difference of means, paired per sample when the unit is the same.
    let defs = registry::for_cells(&[brec.clone(), nrec.clone()]);
    for def in defs
        .iter()
        .filter(|d| matches!(d.aggregate, Aggregate::Rate | Aggregate::Mean))
    {
        let (Some(bt), Some(nt)) = (def.value(b), def.value(n)) else {
            continue;
        };
        if bv.is_empty() || nv.is_empty() {
            continue;
        }
        let rate = def.aggregate == Aggregate::Rate;
        let f = |s: &SampleRecord| def.per_sample(s).unwrap_or(f64::NAN);
        let mut row = template(&def.label, def.better, def.digits);
        row.base = Some(bt);
        row.new = Some(nt);
        let identical = paired
            && bv
                .iter()
                .zip(&nv)
                .all(|(x, y)| f(x).to_bits() == f(y).to_bits());
        let ci = if identical {
            Some((0.0, 0.0))
        } else {
            // Samples without a value (NaN) are left out of both means.
            let mean = |v: &[&SampleRecord], idx: &[usize]| -> f64 {
                let (sum, k) = idx
                    .iter()
                    .map(|&i| f(v[i]))
                    .filter(|x| !x.is_nan())
                    .fold((0.0, 0usize), |a, x| (a.0 + x, a.1 + 1));
                sum / k as f64
            };
            bootstrap(bv.len(), nv.len(), paired, seed(&def.name), |ib, inn| {
                mean(&nv, inn) - mean(&bv, ib)
            })
        };
        let floor = if rate {
            MIN_ABS_RATE_CHANGE
        } else {
            MIN_REL_CHANGE * bt.abs()
        };
        judge(&mut row, bt, nt, ci, identical, floor, rate);
        if def.name == "ser" && paired && nt > bt {
            row.flips = bv
                .iter()
                .zip(&nv)
                .filter(|(x, y)| x.in_support && !y.in_support)
                .take(3)
                .map(|(x, y)| Flip {
                    index: y.index,
                    base_tokens: tokens_string(&x.tokens),
                    new_tokens: tokens_string(&y.tokens),
                    new_first_invalid: y.first_invalid,
                })
                .collect();
        }
        row.status_label = row.status.label();
        out.push(row);
    }
    // Throughput: repeated measurements (timed batches) on each side, asv's rule, on the wall
    // clock and, for work done on the CPU, on the worker's CPU clock too.
    if let (Some(bt), Some(nt)) = (b.tokens_per_second, n.tokens_per_second) {
        let mut wall = template("tokens/s", Better::Higher, 0);
        wall.base = Some(bt);
        wall.new = Some(nt);
        let bsr: Vec<&SampleRecord> = bs.iter().collect();
        let nsr: Vec<&SampleRecord> = ns.iter().collect();
        let throughputs = |rec: &CellRecord, s: &[&SampleRecord], clock| {
            metrics::batch_throughputs(rec, s, clock)
        };
        let (bw, nw) = (
            throughputs(brec, &bsr, Clock::Wall),
            throughputs(nrec, &nsr, Clock::Wall),
        );
        judge_timing(&mut wall, &bw, &nw, opts.timing_noise, seed("tps"));
        if cpu_bound(brec) && cpu_bound(nrec) {
            let mut cpu = template("tokens/CPU-s", Better::Higher, 0);
            let (bc, nc) = (
                throughputs(brec, &bsr, Clock::Cpu),
                throughputs(nrec, &nsr, Clock::Cpu),
            );
            judge_timing(&mut cpu, &bc, &nc, opts.timing_noise, seed("tpc"));
            confirm_with_cpu(&mut wall, &cpu);
            out.push(wall);
            out.push(cpu);
        } else {
            out.push(wall);
        }
    }
    out
}

/// A wall-clock regression or improvement of CPU work stands only when the CPU clock finds the
/// same; otherwise it is the machine (other processes on the cores), not the code: it is shown
/// as a large change, never gated, and the tokens/CPU-s row decides.
fn confirm_with_cpu(wall: &mut Row, cpu: &Row) {
    if matches!(wall.status, Status::Regressed | Status::Improved) && cpu.status != wall.status {
        wall.status = Status::ChangedNotSignificant;
        wall.status_label = wall.status.label();
        wall.note = Some(format!(
            "{}; the CPU time per token does not confirm it ({}): the machine was busier or quieter, not the code slower — the tokens/CPU-s row decides",
            wall.note.as_deref().unwrap_or(""),
            cpu.status.label()
        ));
    }
}

/// Whether a cell's work ran on the worker's CPU, so that its CPU clock measures it: the model
/// says its device is `cpu`, and its timed batches spent at least a tenth of their wall time on
/// the worker's CPU clock (a model that mostly waits — on a GPU, a server, a sleep — spends far
/// less; a busy machine lowers the share, but not that far).
fn cpu_bound(rec: &CellRecord) -> bool {
    if rec.device.as_deref() != Some("cpu") {
        return false;
    }
    let ratios: Vec<f64> = rec
        .batches
        .iter()
        .skip(1)
        .filter(|b| b.wall_seconds > 0.0)
        .filter_map(|b| b.cpu_seconds.map(|c| c / b.wall_seconds))
        .collect();
    stats::quartiles(&ratios).is_some_and(|(median, _, _)| median >= 0.1)
}

/// Fewest timed batches per side for a timing to be judged at all.
pub const MIN_TIMED_BATCHES: usize = 5;
/// Significance level of the Mann–Whitney test on timed batches.
const TIMING_ALPHA: f64 = 0.01;

/// Judge a throughput row from the per-batch throughputs of both runs (warm-up excluded): the
/// ratio of medians must pass a threshold — the larger of the noise floor and each run's own
/// spread (interquartile range over median) — *and* the Mann–Whitney test must find the batches
/// different at 1%. Fewer than [`MIN_TIMED_BATCHES`] timed batches on a side cannot be judged
/// (never gates). Identical timings across reruns are not expected, so nothing here says
/// "identical".
fn judge_timing(row: &mut Row, base: &[f64], new: &[f64], floor: f64, seed: u64) {
    let (Some((bm, bq1, bq3)), Some((nm, nq1, nq3))) =
        (stats::quartiles(base), stats::quartiles(new))
    else {
        row.status = Status::WithinNoise;
        row.status_label = row.status.label();
        row.note = Some("no timed batch on a side".into());
        return;
    };
    let rel = nm / bm - 1.0;
    row.base = Some(bm);
    row.new = Some(nm);
    row.delta = Some(nm - bm);
    row.rel = Some(rel);
    row.paired = false;
    let spread = ((bq3 - bq1) / bm).max((nq3 - nq1) / nm);
    let threshold = floor.max(spread);
    row.method = format!(
        "median of {} vs {} timed batches (first batch = warm-up); Mann–Whitney U at {:.0}%; threshold ±{:.0}% = max(noise floor {:.0}%, spread {:.0}%)",
        base.len(),
        new.len(),
        TIMING_ALPHA * 100.0,
        threshold * 100.0,
        floor * 100.0,
        spread * 100.0
    );
    if base.len() >= 2 && new.len() >= 2 {
        let median = |v: &[f64], idx: &[usize]| -> f64 {
            let picked: Vec<f64> = idx.iter().map(|&i| v[i]).collect();
            stats::quartiles(&picked).map_or(f64::NAN, |q| q.0)
        };
        row.rel_ci = bootstrap(base.len(), new.len(), false, seed, |ib, inn| {
            median(new, inn) / median(base, ib) - 1.0
        });
        row.ci = row.rel_ci.map(|(lo, hi)| (lo * bm, hi * bm));
    }
    if base.len() < MIN_TIMED_BATCHES || new.len() < MIN_TIMED_BATCHES {
        row.status = if rel.abs() > threshold {
            Status::ChangedNotSignificant
        } else {
            Status::WithinNoise
        };
        row.note = Some(format!(
            "fewer than {MIN_TIMED_BATCHES} timed batches on a side ({} vs {}): timing not judged; raise samples or lower batch_size for a timing you can gate on",
            base.len(),
            new.len()
        ));
    } else {
        let p = stats::mann_whitney_p(base, new).unwrap_or(1.0);
        let significant = p < TIMING_ALPHA;
        row.status = if rel < -threshold && significant {
            Status::Regressed
        } else if rel > threshold && significant {
            Status::Improved
        } else if rel.abs() > threshold {
            Status::ChangedNotSignificant
        } else {
            Status::WithinNoise
        };
        row.note = Some(format!("Mann–Whitney p = {p:.3}"));
    }
    row.status_label = row.status.label();
}

/// Set delta, relative delta, CI and status of a quality-like row.
/// `rate`: the metric is a share, whose changes are judged in absolute terms.
fn judge(
    row: &mut Row,
    base: f64,
    new: f64,
    ci: Option<(f64, f64)>,
    identical: bool,
    floor: f64,
    rate: bool,
) {
    let delta = new - base;
    row.delta = Some(delta);
    row.rel = (base != 0.0).then(|| new / base - 1.0);
    row.ci = ci;
    if identical {
        row.status = Status::Identical;
        return;
    }
    let better = row.better.unwrap_or(Better::Neither);
    let practical = delta.abs() >= floor && delta != 0.0;
    let large = if rate {
        delta.abs() >= LARGE_ABS_RATE_CHANGE
    } else {
        row.rel.is_some_and(|r| r.abs() > LARGE_REL_CHANGE)
    };
    row.status = match ci {
        Some((lo, hi)) => {
            let up = lo > 0.0;
            let down = hi < 0.0;
            match better {
                _ if !(up || down) || !practical => {
                    if large {
                        Status::ChangedNotSignificant
                    } else {
                        Status::WithinNoise
                    }
                }
                Better::Lower if up => Status::Regressed,
                Better::Lower => Status::Improved,
                Better::Higher if down => Status::Regressed,
                Better::Higher => Status::Improved,
                Better::Neither => Status::Changed,
            }
        }
        None => {
            if large {
                Status::ChangedNotSignificant
            } else {
                Status::WithinNoise
            }
        }
    };
    if better == Better::Neither && row.status == Status::ChangedNotSignificant {
        row.status = Status::WithinNoise;
    }
}

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

/// Where the JSON twin of an HTML file goes: the same path with `.json`.
pub fn twin_path(html: &Path) -> PathBuf {
    html.with_extension("json")
}

/// Run `compare` and write the requested outputs. Returns the comparison.
pub fn run_compare(
    base: &Path,
    new: &Path,
    opts: &Options,
    html: Option<&Path>,
    json: Option<&Path>,
    bmf: Option<&Path>,
) -> Result<Comparison> {
    let b =
        load_run(base).with_context(|| format!("cannot read the base run {}", base.display()))?;
    let n = load_run(new).with_context(|| format!("cannot read the new run {}", new.display()))?;
    let c = compare(&b, &n, opts);
    let twin = serde_json::to_vec_pretty(&c)?;
    if let Some(p) = html {
        write_atomic(p, c.render_html()?.as_bytes())?;
        // The machine-readable twin always lies next to the page.
        write_atomic(&twin_path(p), &twin)?;
    }
    if let Some(p) = json {
        write_atomic(p, &twin)?;
    }
    if let Some(p) = bmf {
        write_atomic(p, &serde_json::to_vec_pretty(&Comparison::bmf(&n))?)?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str) -> Row {
        Row {
            status: Status::WithinNoise,
            status_label: Status::WithinNoise.label(),
            key: "k".into(),
            unit: "u".into(),
            task: "t".into(),
            model: "m".into(),
            sampler: None,
            steps: None,
            length: 8,
            seed: 0,
            metric: metric.into(),
            better: Some(Better::Higher),
            base: None,
            new: None,
            delta: None,
            rel: None,
            ci: None,
            rel_ci: None,
            n_base: 0,
            n_new: 0,
            method: String::new(),
            paired: false,
            digits: 0,
            note: None,
            flips: Vec::new(),
        }
    }

    /// Nine repeated measurements around `centre`, spread ±1%.
    fn batches(centre: f64) -> Vec<f64> {
        (0..9)
            .map(|i| centre * (1.0 + 0.0025 * (i as f64 - 4.0)))
            .collect()
    }

    #[test]
    fn a_real_slowdown_regresses_and_noise_does_not() {
        let mut r = row("tokens/s");
        judge_timing(&mut r, &batches(100.0), &batches(77.0), 0.10, 1);
        assert_eq!(r.status, Status::Regressed, "{:?}", r.note);
        let mut r = row("tokens/s");
        judge_timing(&mut r, &batches(100.0), &batches(97.0), 0.10, 1);
        assert_eq!(r.status, Status::WithinNoise);
        // Too few timed batches: shown, never judged.
        let mut r = row("tokens/s");
        judge_timing(&mut r, &batches(100.0)[..3], &batches(50.0)[..3], 0.10, 1);
        assert_eq!(r.status, Status::ChangedNotSignificant);
    }

    #[test]
    fn a_wall_change_the_cpu_clock_does_not_confirm_never_gates() {
        // The machine got busier: wall time −25%, CPU time per token flat.
        let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
        judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
        judge_timing(&mut cpu, &batches(100.0), &batches(99.0), 0.10, 2);
        assert_eq!(wall.status, Status::Regressed);
        confirm_with_cpu(&mut wall, &cpu);
        assert_eq!(wall.status, Status::ChangedNotSignificant);
        assert!(!wall.status.gates());
        // The code got slower: both clocks agree, and it gates.
        let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
        judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
        judge_timing(&mut cpu, &batches(100.0), &batches(76.0), 0.10, 2);
        confirm_with_cpu(&mut wall, &cpu);
        assert_eq!(wall.status, Status::Regressed);
        assert_eq!(cpu.status, Status::Regressed);
        // A CPU clock that only moved a little (not significant) does not confirm either.
        let (mut wall, mut cpu) = (row("tokens/s"), row("tokens/CPU-s"));
        judge_timing(&mut wall, &batches(100.0), &batches(75.0), 0.10, 1);
        judge_timing(&mut cpu, &batches(100.0), &batches(88.0)[..3], 0.10, 2);
        confirm_with_cpu(&mut wall, &cpu);
        assert_eq!(wall.status, Status::ChangedNotSignificant);
    }
}
