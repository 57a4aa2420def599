//! `dlm-bench history RUNS_DIR`: every headline metric of every cell over the runs found under
//! `RUNS_DIR` (sorted by the manifests' start times), as inline-SVG sparklines, marking where a
//! change happened: a point outside the previous run's 95% CI (TER, SER), a relative change
//! beyond a floor (NFE 0.5%, tokens/s 10%), and vertical markers where the commit or a
//! plugin version changed.

use crate::metrics::{self, CellSummary};
use crate::registry;
use crate::report::{self, fmt_num, svg};
use crate::results::{read_jsonl, write_atomic, Manifest, RunDir, SUMMARY};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Relative change of a metric without a CI (NFE) that counts as a change.
const NFE_FLOOR: f64 = 0.005;
/// Relative change of tokens/s that counts as a change (timing noise floor).
const TPS_FLOOR: f64 = 0.10;
/// Colour of the commit-change marker.
const COMMIT_COLOR: &str = "#4e79a7";
/// Colour of the plugin-version-change marker.
const PLUGIN_COLOR: &str = "#f28e2b";
/// Sparkline colours per metric: blues, greens and greys only, so that red means a change
/// point and orange a plugin change, nothing else.
const SPARK_COLORS: [&str; 5] = ["#4e79a7", "#59a14f", "#76b7b2", "#5a6b7d", "#9c755f"];

#[derive(Debug, Clone, Serialize)]
pub struct HistoryRun {
    pub index: usize,
    pub dir: PathBuf,
    pub identity: serde_json::Value,
    pub started_at: String,
    pub commit: Option<String>,
    pub cells: usize,
    pub failed: usize,
    /// The commit differs from the previous run's.
    pub commit_changed: bool,
    /// Plugins whose version differs from the previous run's (`name a → b`).
    pub plugin_changes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub run: usize,
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// Why this point is marked as a change (empty: not a change).
    pub change: Option<String>,
    /// The cell failed in this run.
    pub failed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricSeries {
    pub metric: String,
    pub digits: usize,
    pub points: Vec<Point>,
    pub last: Option<f64>,
    pub changes: usize,
    #[serde(skip)]
    pub svg: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellHistory {
    pub key: String,
    pub task: String,
    pub label: String,
    pub metrics: Vec<MetricSeries>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskHistory {
    pub name: String,
    pub cells: Vec<CellHistory>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChangeEvent {
    pub run: usize,
    pub started_at: String,
    pub key: String,
    pub metric: String,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub digits: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub format: &'static str,
    pub runs_dir: PathBuf,
    pub runs: Vec<HistoryRun>,
    pub tasks: Vec<TaskHistory>,
    /// Newest first.
    pub changes: Vec<ChangeEvent>,
    pub skipped: Vec<String>,
}

/// Run directories under `root` (the root itself, or up to three levels down).
pub fn find_runs(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if dir.join(crate::results::MANIFEST).is_file() {
            out.push(dir.to_owned());
            return;
        }
        if depth == 0 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut subdirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        for d in subdirs {
            walk(&d, depth - 1, out);
        }
    }
    let mut out = Vec::new();
    walk(root, 3, &mut out);
    out
}

fn load_summary(dir: &Path) -> Result<Vec<CellSummary>> {
    let path = dir.join(SUMMARY);
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Ok(s) = serde_json::from_str::<Vec<CellSummary>>(&text) {
            return Ok(s);
        }
    }
    // No (readable) summary: recompute it from the samples without rewriting anything.
    let (cells, _) = read_jsonl(&dir.join(crate::results::CELLS))?;
    let (samples, _) = read_jsonl(&dir.join(crate::results::SAMPLES))?;
    Ok(metrics::summarize(&cells, &samples))
}

/// Build the history of the runs under `root`.
pub fn build(root: &Path) -> Result<History> {
    let (loaded, skipped) = load_runs(root)?;
    let runs = history_runs(&loaded);
    let markers = change_markers(&runs);
    // Every metric of the registry with a better direction (informational ones, such as the
    // unigram entropy, are not followed), task-declared ones included.
    let all_rows: Vec<CellSummary> = loaded
        .iter()
        .flat_map(|(_, _, s)| s.iter().cloned())
        .collect();
    let defs: Vec<registry::MetricDef> = registry::for_summaries(&all_rows)
        .into_iter()
        .filter(|d| d.better != registry::Better::Neither)
        .collect();
    let mut tasks: Vec<TaskHistory> = Vec::new();
    let mut changes: Vec<ChangeEvent> = Vec::new();
    for (key, task, label) in cell_keys(&loaded) {
        let cells: Vec<Option<&CellSummary>> = loaded
            .iter()
            .map(|(_, _, s)| s.iter().find(|c| c.key == key))
            .collect();
        let mut metrics_out = Vec::new();
        for (mi, def) in defs.iter().enumerate() {
            let mut points = metric_points(def, &cells);
            for (i, reason) in detect_changes(def, &points) {
                changes.push(ChangeEvent {
                    run: i,
                    started_at: runs[i].started_at.clone(),
                    key: key.clone(),
                    metric: def.label.clone(),
                    from: points[..i]
                        .iter()
                        .rev()
                        .find(|p| p.value.is_some() || p.failed)
                        .and_then(|p| p.value),
                    to: points[i].value,
                    digits: def.digits,
                    reason: reason.clone(),
                });
                points[i].change = Some(reason);
            }
            let color = SPARK_COLORS[mi % SPARK_COLORS.len()];
            metrics_out.push(metric_series(def, points, &runs, &markers, color));
        }
        let entry = CellHistory {
            key,
            task: task.clone(),
            label,
            metrics: metrics_out,
        };
        match tasks.iter_mut().find(|t| t.name == task) {
            Some(t) => t.cells.push(entry),
            None => tasks.push(TaskHistory {
                name: task,
                cells: vec![entry],
            }),
        }
    }
    changes.sort_by(|a, b| b.run.cmp(&a.run).then_with(|| a.key.cmp(&b.key)));
    Ok(History {
        format: "dlm-bench history 1",
        runs_dir: root.to_owned(),
        runs,
        tasks,
        changes,
        skipped,
    })
}

/// A run directory with its manifest and summary rows.
type LoadedRun = (PathBuf, Manifest, Vec<CellSummary>);

/// Every readable run under `root`, oldest first, and the directories that could not be read.
fn load_runs(root: &Path) -> Result<(Vec<LoadedRun>, Vec<String>)> {
    let mut loaded: Vec<LoadedRun> = Vec::new();
    let mut skipped = Vec::new();
    for dir in find_runs(root) {
        let manifest = match RunDir::open_read_only(&dir).and_then(|d| d.read_manifest()) {
            Ok(m) => m,
            Err(e) => {
                skipped.push(format!("{}: {e:#}", dir.display()));
                continue;
            }
        };
        match load_summary(&dir) {
            Ok(s) => loaded.push((dir, manifest, s)),
            Err(e) => skipped.push(format!("{}: {e:#}", dir.display())),
        }
    }
    if loaded.is_empty() {
        anyhow::bail!(
            "no dlm-bench run directories (with a manifest.json) under {}",
            root.display()
        );
    }
    loaded.sort_by(|a, b| {
        a.1.started_at
            .cmp(&b.1.started_at)
            .then_with(|| a.0.cmp(&b.0))
    });
    Ok((loaded, skipped))
}

/// The runs' identities, with what changed since the previous run (commit, plugin versions).
fn history_runs(loaded: &[LoadedRun]) -> Vec<HistoryRun> {
    let mut runs = Vec::new();
    for (i, (dir, m, s)) in loaded.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| &loaded[j].1);
        let plugin_changes = prev
            .map(|p| {
                m.plugins
                    .iter()
                    .filter_map(|x| {
                        p.plugins
                            .iter()
                            .find(|o| o.name == x.name && o.version != x.version)
                            .map(|o| format!("{} {} → {}", x.name, o.version, x.version))
                    })
                    .collect()
            })
            .unwrap_or_default();
        runs.push(HistoryRun {
            index: i,
            dir: dir.clone(),
            identity: report::identity(m),
            started_at: m.started_at.clone(),
            commit: m.git_commit.clone(),
            cells: s.len(),
            failed: s
                .iter()
                .filter(|c| c.status == crate::results::CellStatus::Failed)
                .count(),
            commit_changed: prev.is_some_and(|p| p.git_commit != m.git_commit),
            plugin_changes,
        });
    }
    runs
}

/// Vertical markers on every sparkline: a plugin version change, else a commit change.
fn change_markers(runs: &[HistoryRun]) -> Vec<(usize, &'static str)> {
    runs.iter()
        .filter(|r| r.index > 0)
        .filter_map(|r| {
            if !r.plugin_changes.is_empty() {
                Some((r.index, PLUGIN_COLOR))
            } else if r.commit_changed {
                Some((r.index, COMMIT_COLOR))
            } else {
                None
            }
        })
        .collect()
}

/// Cell keys in order of first appearance, with their task and a label.
fn cell_keys(loaded: &[LoadedRun]) -> Vec<(String, String, String)> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for (_, _, s) in loaded {
        for c in s {
            if !keys.iter().any(|k| k.0 == c.key) {
                let label = format!(
                    "{} · {}{}",
                    c.model,
                    c.sampler.as_deref().unwrap_or("ground truth"),
                    c.steps
                        .filter(|_| !c.one_step_per_token)
                        .map(|s| format!(" @ {s} steps"))
                        .unwrap_or_default()
                );
                keys.push((c.key.clone(), c.task.clone(), label));
            }
        }
    }
    keys
}

/// One metric of one cell across the runs (`None`: the run lacks the cell).
fn metric_points(def: &registry::MetricDef, cells: &[Option<&CellSummary>]) -> Vec<Point> {
    let timing = def.aggregate == registry::Aggregate::Timing;
    let mut points: Vec<Point> = Vec::with_capacity(cells.len());
    for (run, c) in cells.iter().enumerate() {
        let failed = c.is_some_and(|c| c.status == crate::results::CellStatus::Failed);
        // Timings' spread (IQR) is not a CI of the figure: they are judged by a floor.
        let (value, ci) = match c {
            Some(c) if !failed => (def.value(c), def.ci(c).filter(|_| !timing)),
            _ => (None, None),
        };
        // TER is infinite (not missing) when some sample has q = 0.
        let value = match (value, c) {
            (None, Some(c))
                if def.aggregate == registry::Aggregate::Perplexity
                    && !failed
                    && c.zero_probability_samples > 0 =>
            {
                Some(f64::INFINITY)
            }
            (v, _) => v,
        };
        points.push(Point {
            run,
            value,
            ci,
            change: None,
            failed,
        });
    }
    points
}

/// Changes against the previous run that has this cell: `(run, reason)`.
fn detect_changes(def: &registry::MetricDef, points: &[Point]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut prev: Option<usize> = None;
    for (i, b) in points.iter().enumerate() {
        if b.value.is_none() && !b.failed {
            continue;
        }
        if let Some(reason) = prev.and_then(|j| change_reason(def, &points[j], b)) {
            out.push((i, reason));
        }
        prev = Some(i);
    }
    out
}

/// Why `b` differs from the earlier point `a`, if it does.
fn change_reason(def: &registry::MetricDef, a: &Point, b: &Point) -> Option<String> {
    let (metric, digits) = (&def.label, def.digits);
    let timing = def.aggregate == registry::Aggregate::Timing;
    match (a.value, b.value) {
        _ if b.failed && !a.failed => Some("the cell failed".to_string()),
        _ if a.failed && !b.failed => Some("the cell finished again".to_string()),
        (Some(x), Some(y)) if x.is_infinite() != y.is_infinite() => Some(
            if y.is_infinite() {
                "became infinite"
            } else {
                "became finite"
            }
            .to_string(),
        ),
        (Some(x), Some(y)) if x.is_finite() && y.is_finite() => match a.ci {
            Some((lo, hi)) if y < lo || y > hi => Some(format!(
                "outside the previous run's 95% CI [{}, {}]",
                fmt_num(Some(lo), digits),
                fmt_num(Some(hi), digits)
            )),
            Some(_) => None,
            None if timing && x > 0.0 && (y / x - 1.0).abs() > TPS_FLOOR => Some(format!(
                "{:+.0}% {metric} (beyond the ±{:.0}% noise floor)",
                100.0 * (y / x - 1.0),
                TPS_FLOOR * 100.0
            )),
            None if !timing && x > 0.0 && (y / x - 1.0).abs() > NFE_FLOOR => {
                Some(format!("{:+.1}% {metric}", 100.0 * (y / x - 1.0)))
            }
            None => None,
        },
        _ => None,
    }
}

/// One metric's row of a cell: its points, sparkline and last value.
fn metric_series(
    def: &registry::MetricDef,
    points: Vec<Point>,
    runs: &[HistoryRun],
    markers: &[(usize, &str)],
    color: &str,
) -> MetricSeries {
    let digits = def.digits;
    let empty = points.iter().all(|p| p.value.is_none() && !p.failed);
    let values: Vec<Option<f64>> = points
        .iter()
        .map(|p| p.value.filter(|v| v.is_finite()))
        .collect();
    let bands: Vec<Option<(f64, f64)>> = points.iter().map(|p| p.ci).collect();
    let changed: Vec<usize> = points
        .iter()
        .filter(|p| p.change.is_some())
        .map(|p| p.run)
        .collect();
    let tips: Vec<String> = points.iter().map(|p| point_tip(p, runs, digits)).collect();
    let svg = if empty {
        String::new()
    } else {
        svg::Spark {
            values: &values,
            bands: &bands,
            changed: &changed,
            markers,
            tips: &tips,
            color,
        }
        .render()
    };
    MetricSeries {
        metric: def.label.clone(),
        digits,
        last: points.last().and_then(|p| p.value),
        changes: changed.len(),
        points,
        svg,
    }
}

/// Hover text of a sparkline point: the run, its commit, the value, its CI and any change.
fn point_tip(p: &Point, runs: &[HistoryRun], digits: usize) -> String {
    let r = &runs[p.run];
    format!(
        "run {} ({}, {}): {}{}{}",
        p.run + 1,
        r.started_at,
        r.commit
            .as_deref()
            .map(|c| &c[..c.len().min(10)])
            .unwrap_or("unknown commit"),
        if p.failed {
            "failed".to_string()
        } else {
            fmt_num(p.value, digits)
        },
        p.ci.map(|(a, b)| format!(
            " [{}, {}]",
            fmt_num(Some(a), digits),
            fmt_num(Some(b), digits)
        ))
        .unwrap_or_default(),
        p.change
            .as_ref()
            .map(|c| format!(" — change: {c}"))
            .unwrap_or_default()
    )
}

impl History {
    pub fn render_html(&self) -> Result<String> {
        // The template reads the SVG from a parallel structure (it is not part of the JSON twin).
        let svgs: BTreeMap<String, Vec<String>> = self
            .tasks
            .iter()
            .flat_map(|t| t.cells.iter())
            .map(|c| {
                (
                    c.key.clone(),
                    c.metrics.iter().map(|m| m.svg.clone()).collect(),
                )
            })
            .collect();
        report::environment()?
            .get_template("history.html")?
            .render(minijinja::context! {
                h => self,
                svgs => svgs,
                commit_color => COMMIT_COLOR,
                plugin_color => PLUGIN_COLOR,
                shown_changes => self.changes.iter().take(300).collect::<Vec<_>>(),
            })
            .context("cannot render the history page")
    }
}

/// Build the history and write the HTML page and its JSON twin.
pub fn run_history(root: &Path, html: Option<&Path>) -> Result<(History, PathBuf)> {
    let h = build(root)?;
    let html = html
        .map(Path::to_owned)
        .unwrap_or_else(|| root.join("history.html"));
    write_atomic(&html, h.render_html()?.as_bytes())?;
    write_atomic(
        &html.with_extension("json"),
        &serde_json::to_vec_pretty(&h)?,
    )?;
    Ok((h, html))
}
