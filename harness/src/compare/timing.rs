//! Whether two runs' timings may be judged at all, and the one line that sums up the timing rows.
//!
//! A timing is a measurement of the machine as much as of the code. It is judged only when both
//! runs timed their cells alone: every session of `run` (the first and each `--resume`, as
//! `manifest.json` records them) ran one cell at a time, and the cores left over by other work
//! had room for it, at the start and at the end (the rule in [`session_problem`]). Otherwise no
//! timing row is judged, whatever it shows, and one line says why; quality rows are unaffected.

use super::{Row, Status};
use crate::results::{Manifest, RunSession};
use serde::Serialize;

/// The metrics that measure time (compare's throughput rows).
const TIMING_METRICS: [&str; 2] = ["tokens/s", "tokens/CPU-s"];

/// Whether `row` is a timing row.
pub(super) fn is_timing(row: &Row) -> bool {
    TIMING_METRICS.contains(&row.metric.as_str())
}

/// Why a session's timings cannot be trusted, or `None` when its cells were timed alone: one
/// cell at a time (`--jobs 1`, or a single cell to run), and at both ends of the session the
/// 1-minute load left a core for that worker. At the start the load is other work only (it is
/// measured before anything of the run starts), so it must be at most `cores − 1`; at the end
/// it includes the run's own worker, so it must be at most `cores`. An unknown load (no
/// `/proc/loadavg`) is not assumed to be low.
pub(super) fn session_problem(s: &RunSession) -> Option<String> {
    let load = |l: Option<f64>| l.map_or("unknown".to_string(), |l| format!("{l:.1}"));
    let loads = format!(
        "load {} → {} on {} core{}",
        load(s.load_start),
        load(s.load_end),
        s.cores,
        if s.cores == 1 { "" } else { "s" }
    );
    if s.shared_cores() {
        return Some(format!("ran {} cells at a time ({loads})", s.jobs));
    }
    let (Some(start), Some(end)) = (s.load_start, s.load_end) else {
        return Some(format!(
            "ran one cell at a time, but the load was not recorded ({loads})"
        ));
    };
    let cores = s.cores as f64;
    if start + 1.0 > cores || end > cores {
        return Some(format!(
            "ran one cell at a time on a busy machine ({loads}: other work left no core free)"
        ));
    }
    None
}

/// Why the timings of the run described by `m` cannot be trusted (every session's problem,
/// joined), or `None` when every session timed its cells alone.
fn run_problem(m: &Manifest) -> Option<String> {
    if m.sessions.is_empty() {
        return Some(
            "has no record of how its cells were timed (written before dlm-bench recorded --jobs and the load)"
                .into(),
        );
    }
    let problems: Vec<String> = m.sessions.iter().filter_map(session_problem).collect();
    match problems.len() {
        0 => None,
        1 if m.sessions.len() == 1 => problems.into_iter().next(),
        _ => Some(format!(
            "{} of its {} sessions: {}",
            problems.len(),
            m.sessions.len(),
            problems.join("; ")
        )),
    }
}

/// The CPU models both runs were timed on, when they are known and differ.
fn cpu_problem(base: &Manifest, new: &Manifest) -> Option<String> {
    let model = |m: &Manifest| -> Option<String> {
        let models: Vec<&str> = m
            .sessions
            .iter()
            .filter_map(|s| s.cpu_model.as_deref())
            .collect();
        models.first().map(|first| first.to_string())
    };
    match (model(base), model(new)) {
        (Some(b), Some(n)) if b != n => Some(format!(
            "the runs were timed on different CPUs ({b} vs {n})"
        )),
        _ => None,
    }
}

/// Why timings of this pair of runs are not judged (empty: they are).
pub(super) fn trust_problems(base: &Manifest, new: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = run_problem(base) {
        out.push(format!("the base run {p}"));
    }
    if let Some(p) = run_problem(new) {
        out.push(format!("the new run {p}"));
    }
    out.extend(cpu_problem(base, new));
    out
}

/// The timing rows of a comparison in one place: whether they were judged, how many fell
/// within noise, and the line that says so instead of one row each.
#[derive(Debug, Clone, Serialize)]
pub struct TimingSummary {
    /// Whether timing rows were judged at all (both runs timed their cells alone).
    pub judged: bool,
    /// Why they were not (empty when judged).
    pub not_judged_because: Vec<String>,
    pub rows: usize,
    pub regressed: usize,
    pub improved: usize,
    /// Judged rows whose difference is below the threshold or not significant.
    pub within_noise: usize,
    /// Rows not judged (untrusted timings, or too few timed batches).
    pub not_judged: usize,
    /// The largest |relative difference| among the rows within noise (when judged), or among
    /// the rows not judged (when not).
    pub largest_quiet_rel: Option<f64>,
    /// The summary line the terminal, the page and the history show.
    pub line: String,
}

impl TimingSummary {
    /// Sum up the timing rows of `rows`, judged or not as `problems` says.
    pub fn of(rows: &[Row], problems: Vec<String>) -> Self {
        let timing: Vec<&Row> = rows.iter().filter(|r| is_timing(r)).collect();
        let count = |s: Status| timing.iter().filter(|r| r.status == s).count();
        let judged = problems.is_empty();
        // Judged: the largest difference called noise; not judged: the largest left unjudged.
        let quiet = if judged {
            Status::WithinNoise
        } else {
            Status::NotJudged
        };
        let largest = timing
            .iter()
            .filter(|r| r.status == quiet)
            .filter_map(|r| r.rel.filter(|x| x.is_finite()).map(f64::abs))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        let largest_text = largest
            .map(|x| format!(" (largest ±{:.0}%)", 100.0 * x))
            .unwrap_or_default();
        let (regressed, improved) = (count(Status::Regressed), count(Status::Improved));
        let (within_noise, not_judged) = (count(Status::WithinNoise), count(Status::NotJudged));
        let line = if timing.is_empty() {
            "no timing rows".to_string()
        } else if !judged {
            format!(
                "timings not compared: {}; {} timing row{} not judged{largest_text}; quality rows compared as usual",
                problems.join("; "),
                not_judged,
                plural(not_judged)
            )
        } else {
            let mut parts = Vec::new();
            if regressed + improved > 0 {
                parts.push(format!(
                    "{regressed} timing row{} regressed and {improved} improved (listed)",
                    plural(regressed)
                ));
            }
            parts.push(format!(
                "{within_noise} timing row{} within noise{largest_text}",
                plural(within_noise)
            ));
            if not_judged > 0 {
                parts.push(format!(
                    "{not_judged} not judged (fewer than {} timed batches on a side)",
                    super::MIN_TIMED_BATCHES
                ));
            }
            parts.join("; ")
        };
        TimingSummary {
            judged,
            not_judged_because: problems,
            rows: timing.len(),
            regressed,
            improved,
            within_noise,
            not_judged,
            largest_quiet_rel: largest,
            line,
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Mark every timing row of `rows` as not judged, keeping its figures and saying why (rows
/// already not comparable, their plugin having changed, stay so).
pub(super) fn withhold_judgement(rows: &mut [Row]) {
    for r in rows
        .iter_mut()
        .filter(|r| is_timing(r) && r.status != Status::NotComparable)
    {
        r.status = Status::NotJudged;
        r.status_label = Status::NotJudged.label();
        r.note = Some("not judged: the timings were not taken alone (see the timing line)".into());
    }
}
