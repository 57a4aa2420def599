//! `dlm-bench history RUNS_DIR`: every headline metric of every cell over the runs found under
//! `RUNS_DIR` (sorted by the manifests' start times), as inline-SVG sparklines, marking where a
//! change happened, with vertical markers where the commit or a plugin version changed.
//!
//! History has no rule of its own for what a change is: each run is compared with its base —
//! the latest earlier finished run of the same suite, the run `nightly` compares it with — by
//! `compare` itself ([`compare::compare`], default options, as `nightly` calls it), and its
//! changes are exactly that comparison's changed rows. So `history` and `compare` agree by
//! construction, timing noise and untrusted timings included.

use crate::compare::{self, Comparison, Row, RunData, Status, TimingSummary};
use crate::metrics::CellSummary;
use crate::registry;
use crate::report::{self, fmt_num, svg};
use crate::results::{write_atomic, Manifest, RunDir};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
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
    /// The run this one is compared with (index into `runs`): the latest earlier finished run
    /// of the same suite. `None`: the first of its suite.
    pub base: Option<usize>,
    /// Changed rows of that comparison, and how many of them gate.
    pub changes: usize,
    pub regressions: usize,
    /// That comparison's timing line (judged or not, and the noise in one line).
    pub timing: Option<String>,
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

/// One changed row of a run's comparison with its base.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeEvent {
    pub run: usize,
    /// The run it was compared with.
    pub base: usize,
    pub started_at: String,
    pub key: String,
    /// A metric, or `cell` for a cell-level event (new failure, fixed, added, removed…).
    pub metric: String,
    pub status: Status,
    pub status_label: &'static str,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub digits: usize,
    /// The status and the comparison's note.
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

/// A run as history keeps it: its manifest and summary rows, and its comparison with its base.
struct LoadedRun {
    dir: PathBuf,
    manifest: Manifest,
    summary: Vec<CellSummary>,
    compared: Option<Compared>,
}

/// What history keeps of a run's comparison with its base.
struct Compared {
    base: usize,
    changes: Vec<Row>,
    regressions: usize,
    timing: TimingSummary,
}

impl Compared {
    fn of(base: usize, c: Comparison) -> Self {
        Compared {
            base,
            regressions: c.regressions,
            timing: c.timing,
            changes: c
                .rows
                .into_iter()
                .filter(|r| r.status.is_change())
                .collect(),
        }
    }
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
        .flat_map(|r| r.summary.iter().cloned())
        .collect();
    let defs: Vec<registry::MetricDef> = registry::for_summaries(&all_rows)
        .into_iter()
        .filter(|d| d.better != registry::Better::Neither)
        .collect();
    let changes = change_events(&loaded);
    let mut tasks: Vec<TaskHistory> = Vec::new();
    for (key, task, label) in cell_keys(&loaded) {
        let cells: Vec<Option<&CellSummary>> = loaded
            .iter()
            .map(|r| r.summary.iter().find(|c| c.key == key))
            .collect();
        let mut metrics_out = Vec::new();
        for (mi, def) in defs.iter().enumerate() {
            let mut points = metric_points(def, &cells);
            for e in changes
                .iter()
                .filter(|e| e.key == key && (e.metric == def.label || e.metric == "cell"))
            {
                points[e.run].change = Some(e.reason.clone());
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
    Ok(History {
        format: "dlm-bench history 2",
        runs_dir: root.to_owned(),
        runs,
        tasks,
        changes,
        skipped,
    })
}

/// Every changed row of every run's comparison with its base, newest run first.
fn change_events(loaded: &[LoadedRun]) -> Vec<ChangeEvent> {
    let mut out = Vec::new();
    for (run, r) in loaded.iter().enumerate() {
        let Some(c) = &r.compared else { continue };
        for row in &c.changes {
            out.push(ChangeEvent {
                run,
                base: c.base,
                started_at: r.manifest.started_at.clone(),
                key: row.key.clone(),
                metric: row.metric.clone(),
                status: row.status,
                status_label: row.status_label,
                from: row.base,
                to: row.new,
                digits: row.digits,
                reason: match &row.note {
                    Some(n) => format!("{}: {n}", row.status_label),
                    None => row.status_label.to_string(),
                },
            });
        }
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.run));
    out
}

/// Every readable run under `root`, oldest first, each compared with its base; and the
/// directories that could not be read. Runs are read one at a time and only the latest
/// finished run of each suite is kept whole (samples and all), as the next run's base.
fn load_runs(root: &Path) -> Result<(Vec<LoadedRun>, Vec<String>)> {
    let mut found: Vec<(PathBuf, Manifest)> = Vec::new();
    let mut skipped = Vec::new();
    for dir in find_runs(root) {
        match RunDir::open_read_only(&dir).and_then(|d| d.read_manifest()) {
            Ok(m) => found.push((dir, m)),
            Err(e) => skipped.push(format!("{}: {e:#}", dir.display())),
        }
    }
    found.sort_by(|a, b| {
        a.1.started_at
            .cmp(&b.1.started_at)
            .then_with(|| a.0.cmp(&b.0))
    });
    let mut loaded: Vec<LoadedRun> = Vec::new();
    // Per suite: the latest finished run (its index in `loaded`, and its data).
    let mut bases: HashMap<String, (usize, RunData)> = HashMap::new();
    for (dir, manifest) in found {
        let data = match compare::load_run(&dir) {
            Ok(d) => d,
            Err(e) => {
                skipped.push(format!("{}: {e:#}", dir.display()));
                continue;
            }
        };
        let compared = bases.get(&manifest.suite_name).map(|(i, base)| {
            Compared::of(
                *i,
                compare::compare(base, &data, &compare::Options::default()),
            )
        });
        let index = loaded.len();
        loaded.push(LoadedRun {
            dir,
            summary: data.summary.clone(),
            compared,
            manifest: manifest.clone(),
        });
        // The same rule as `nightly::latest_run`: only a finished run is a base.
        if manifest.finished_at.is_some() {
            bases.insert(manifest.suite_name.clone(), (index, data));
        }
    }
    if loaded.is_empty() {
        anyhow::bail!(
            "no dlm-bench run directories (with a manifest.json) under {}",
            root.display()
        );
    }
    Ok((loaded, skipped))
}

/// The runs' identities, with what changed since the previous run (commit, plugin versions)
/// and what their comparison with their base found.
fn history_runs(loaded: &[LoadedRun]) -> Vec<HistoryRun> {
    let mut runs = Vec::new();
    for (i, r) in loaded.iter().enumerate() {
        let (dir, m, s) = (&r.dir, &r.manifest, &r.summary);
        let prev = i.checked_sub(1).map(|j| &loaded[j].manifest);
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
            base: r.compared.as_ref().map(|c| c.base),
            changes: r.compared.as_ref().map_or(0, |c| c.changes.len()),
            regressions: r.compared.as_ref().map_or(0, |c| c.regressions),
            timing: r.compared.as_ref().map(|c| c.timing.line.clone()),
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
    for r in loaded {
        for c in &r.summary {
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
