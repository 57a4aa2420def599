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
//! * Timing (tokens/s) is never paired and never "identical". It is judged only when both runs
//!   timed their cells alone (`timing.rs`: one cell at a time on a machine with a core to spare,
//!   as the manifests' sessions record); otherwise every timing row is "not judged" and one line
//!   says why. Each batch of a cell is a repeated measurement of the same work (the first, a
//!   warm-up, is not timed); asv's rule judges it: the ratio of median batch throughputs must
//!   pass a threshold (the noise floor or the runs' own spread, whichever is larger) *and* a
//!   Mann–Whitney test must find the batches different. Anything less is noise, summed up in
//!   one line ([`TimingSummary`]) rather than listed as changes.
//! * A cell whose task or model plugin version changed is "not comparable" (asv's `x`).
//!
//! The exit code is [`EXIT_REGRESSION`] when any row regressed or newly failed.

use crate::metrics::{self, CellSummary};
use crate::report;
use crate::results::{write_atomic, CellRecord, CellStatus, Manifest, RunDir, SampleRecord};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod cell;
mod judge;
mod render;
#[cfg(test)]
mod tests;
mod timing;

use cell::CellPair;
pub use judge::MIN_TIMED_BATCHES;
use judge::TIMING_ALPHA;
pub use timing::TimingSummary;

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
    /// A timing that was not judged: the runs did not time their cells alone, or too few
    /// batches were timed. Shown, never a change.
    NotJudged,
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
            Status::NotJudged => "not judged",
            Status::Identical => "identical",
        }
    }
    pub fn gates(self) -> bool {
        matches!(self, Status::Regressed | Status::NewFailure)
    }
    pub fn is_change(self) -> bool {
        !matches!(
            self,
            Status::WithinNoise | Status::NotJudged | Status::Identical
        )
    }
    pub const ALL: [Status; 13] = [
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
        Status::NotJudged,
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
    /// How its cells were timed (`--jobs`, CPU, load), or `None` for runs that did not record it.
    pub timing: Option<String>,
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
    /// The timing rows in one line: judged or not, and how many were noise.
    pub timing: TimingSummary,
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
        timing: crate::results::timing_line(&r.manifest.sessions),
    }
}

/// Compare two loaded runs.
pub fn compare(base: &RunData, new: &RunData, opts: &Options) -> Comparison {
    let (banners, notes) = manifest_notes(&base.manifest, &new.manifest);
    let mut rows = cell_rows(base, new, opts);
    let timing_problems = timing::trust_problems(&base.manifest, &new.manifest);
    if !timing_problems.is_empty() {
        timing::withhold_judgement(&mut rows);
    }
    let timing = TimingSummary::of(&rows, timing_problems);
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
        format: "dlm-bench compare 2",
        base: side(base),
        new: side(new),
        banners,
        notes,
        counts,
        regressions,
        timing,
        only_changed: opts.only_changed,
        rules: rules(opts),
        rows,
    }
}

/// Banners (the runs are not like for like) and notes (what else differs) from the manifests.
fn manifest_notes(bm: &Manifest, nm: &Manifest) -> (Vec<String>, Vec<String>) {
    let mut banners = Vec::new();
    let mut notes = Vec::new();
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
    (banners, notes)
}

/// The rows of every base cell against its match in the new run (by unit, else by key), then
/// the new run's unmatched cells as added.
fn cell_rows(base: &RunData, new: &RunData, opts: &Options) -> Vec<Row> {
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
        let mut cell_rows = CellPair::new((b, brec, bs), (n, nrec, ns), same_unit).rows(opts);
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
    rows
}

/// The rules a comparison applied, stated with their thresholds.
fn rules(opts: &Options) -> Rules {
    Rules {
            confidence: 0.95,
            bootstrap_resamples: crate::stats::BOOTSTRAP_RESAMPLES,
            timing_noise: opts.timing_noise,
            min_rel_change: MIN_REL_CHANGE,
            min_abs_ser_change: MIN_ABS_RATE_CHANGE,
            large_rel_change: LARGE_REL_CHANGE,
            text: vec![
                "TER, SER, NFE and unigram entropy: 95% CI of new − base by bootstrap over sequences, paired per sample (same unit and sample index) when the cell's unit is unchanged, unpaired otherwise.".into(),
                format!("Regressed / improved: the CI excludes 0 on the worse / better side and the change is at least {:.1}% (SER: {} absolute). Identical samples: identical (never \"within noise\").", MIN_REL_CHANGE * 100.0, MIN_ABS_RATE_CHANGE),
                format!("A change of more than {:.0}% (SER: 0.05) whose CI includes 0 is '~ large, not significant'; it does not gate.", LARGE_REL_CHANGE * 100.0),
                "Timings (tokens/s, tokens/CPU-s) are judged only when both runs timed their cells alone: every session of the run (manifest.json's sessions) ran one cell at a time, with a 1-minute load of at most cores − 1 when it started and at most cores when it ended, and both runs on the same CPU model. Otherwise every timing row is 'not judged', one line says why, and nothing about timing gates.".into(),
                format!("tokens/s: each batch of a cell is one repeated measurement (the first is a warm-up and not timed). Regressed / improved only when the ratio of median batch throughputs is beyond the threshold — the larger of the noise floor (±{:.0}%) and either run's own spread (IQR / median) — and a Mann–Whitney U test finds the batches different at {:.0}%; any other difference is within noise, counted in one line rather than listed. Cells with fewer than {} timed batches on a side are not judged.", opts.timing_noise * 100.0, TIMING_ALPHA * 100.0, MIN_TIMED_BATCHES),
                "Not comparable: the cell's task or model plugin version differs (figures shown, never gated). Exit code 4 when any row is regressed or a new failure.".into(),
            ],
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
