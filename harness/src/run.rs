//! Running a suite: resolve and describe plugins, check the suite against them, run every
//! unfinished cell in a worker process, append results as each cell finishes, then write the
//! summary and the report.

use crate::plugins;
use crate::progress::{cell_cost, short_cause, training_cost, Progress};
use crate::report;
use crate::results::{
    now_rfc3339, CellRecord, CellStatus, Manifest, ManifestPlugin, RunDir, RunSession, SampleRecord,
};
use crate::suite::{check_config_keys, did_you_mean, CellSpec, PluginRef, Suite, SuiteError};
use crate::training;
use crate::worker::{self, Job, Outcome};
use anyhow::{Context, Result};
use dlm_plugin_api::{ComponentKind, PluginDescriptor};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct RunOptions {
    pub suite: PathBuf,
    pub out: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    pub plugin_profile: String,
    /// `--plugin-dir`: prebuilt plugin libraries (else `$DLM_BENCH_PLUGIN_DIR`).
    pub plugin_dir: Option<PathBuf>,
    /// The checkpoint cache for models with `train:`.
    pub checkpoints: PathBuf,
    /// Cells run at once, each in its own worker (`None`: [`default_jobs`]).
    pub jobs: Option<usize>,
    /// Run only this shard of the suite's cells (`None`: all, unless a Slurm job array says).
    pub shard: Option<crate::shard::Shard>,
    /// `--tasks/--models/--limit`: run part of the suite (recorded in the manifest).
    pub filters: crate::filter::RunFilters,
}

/// Cells at once when the user does not say: `$DLM_BENCH_JOBS` if set, else 1 when a plugin
/// runs on a device other than the CPU (cells would contend for one accelerator), else the
/// number of cores.
pub fn default_jobs(descriptors: &Descriptors) -> usize {
    if let Some(jobs) = std::env::var("DLM_BENCH_JOBS")
        .ok()
        .and_then(|j| j.parse::<usize>().ok())
        .filter(|&j| j > 0)
    {
        return jobs;
    }
    let accelerated = descriptors
        .values()
        .filter_map(|d| d.as_ref().ok())
        .any(|d| d.device != "cpu");
    if accelerated {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

pub struct RunOutcome {
    pub dir: PathBuf,
    pub ok: usize,
    pub failed: usize,
    pub skipped: usize,
    /// The run's summary rows (as `summary.json`), for the results table.
    pub summary: Vec<crate::summary::CellSummary>,
}

fn command_output(program: &str, args: &[&str], dir: &Path) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub(crate) type Descriptors = BTreeMap<PluginRef, std::result::Result<PluginDescriptor, String>>;

/// Check that every task, model and sampler the suite names exists in its plugin.
pub(crate) fn check_components(suite: &Suite, descriptors: &Descriptors) -> Result<(), SuiteError> {
    for t in &suite.tasks {
        if let Some(Ok(d)) = descriptors.get(&t.plugin) {
            let Some(info) = d.component(ComponentKind::Task, &t.component) else {
                return Err(SuiteError::at(
                    &suite.source,
                    &t.component_span,
                    format!(
                        "plugin `{}` provides no task `{}`{}",
                        d.name,
                        t.component,
                        did_you_mean(&t.component, d.tasks.iter().map(|c| c.name.as_str()))
                    ),
                ));
            };
            let what = format!("task `{}` ({} in plugin `{}`)", t.name, t.component, d.name);
            check_config_keys(&suite.source, &t.config_keys, info, &what)?;
        }
    }
    for m in &suite.models {
        if let Some(Ok(d)) = descriptors.get(&m.plugin) {
            let Some(info) = d.component(ComponentKind::Model, &m.component) else {
                return Err(SuiteError::at(
                    &suite.source,
                    &m.component_span,
                    format!(
                        "plugin `{}` provides no model `{}`{}",
                        d.name,
                        m.component,
                        did_you_mean(&m.component, d.models.iter().map(|c| c.name.as_str()))
                    ),
                ));
            };
            let what = format!(
                "model `{}` ({} in plugin `{}`)",
                m.name, m.component, d.name
            );
            check_config_keys(&suite.source, &m.config_keys, info, &what)?;
            if let (Some(_), Some(span)) = (&m.train, &m.train_span) {
                if !info.has("train") {
                    return Err(SuiteError::at(
                        &suite.source,
                        span,
                        format!(
                            "model `{}` ({} in plugin `{}`) cannot be trained by the harness (no `train` capability); remove `train:` and give it trained weights in `config`",
                            m.name, m.component, d.name
                        ),
                    ));
                }
            }
            for &si in &m.samplers {
                let s = &suite.samplers[si];
                // How `steps` applies is the plugin's to say.
                if let Some(si) = info.sampler_info.iter().find(|i| i.name == s.sampler) {
                    match (si.one_step_per_token, s.steps_span) {
                        (true, Some(span)) => {
                            return Err(SuiteError::at(
                                &suite.source,
                                &span,
                                format!(
                                    "{} takes exactly one step per token (plugin `{}`); remove `steps`",
                                    s.sampler, d.name
                                ),
                            ))
                        }
                        (false, None) if !si.steps_optional => {
                            return Err(SuiteError::at(
                                &suite.source,
                                &s.span,
                                format!(
                                    "sampler `{}` needs `steps: [...]` (the total number of denoising steps)",
                                    s.sampler
                                ),
                            ))
                        }
                        _ => {}
                    }
                }
                if !info.samplers.is_empty() && !info.samplers.contains(&s.sampler) {
                    return Err(SuiteError::at(
                        &suite.source,
                        &s.span,
                        format!(
                            "model `{}` ({} in plugin `{}`) does not support sampler `{}`{}",
                            m.name,
                            m.component,
                            d.name,
                            s.sampler,
                            did_you_mean(&s.sampler, info.samplers.iter().map(String::as_str))
                        ),
                    ));
                }
            }
        }
    }
    crate::suite::check_length_overrides(suite, |m| match descriptors.get(&m.plugin) {
        Some(Ok(d)) => d.component(ComponentKind::Model, &m.component),
        _ => None,
    })
}

/// Load a suite, build and describe its plugins, and check it against them.
pub fn prepare(
    suite_path: &Path,
    search: &plugins::PluginSearch,
) -> Result<(Suite, plugins::Libraries, Descriptors, plugins::Origins)> {
    let suite = Suite::load(suite_path)?;
    let (libraries, origins) = plugins::resolve(&suite, search)?;
    let scratch = tempfile_dir()?;
    let mut descriptors: Descriptors = BTreeMap::new();
    for (r, lib) in &libraries {
        let d = plugins::describe(lib, &scratch)?;
        if let Err(cause) = &d {
            plugins::refuse_unloadable_prebuilt(r, lib, origins.get(r).copied(), cause)?;
            tracing::error!(
                "plugin {r} ({}) cannot be loaded; its cells will fail: {cause}",
                lib.display()
            );
        }
        descriptors.insert(r.clone(), d);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    check_components(&suite, &descriptors)?;
    Ok((suite, libraries, descriptors, origins))
}

pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    let started = Instant::now();
    // The load before this run builds, trains or samples anything: the machine's other work.
    let mut session = RunSession::begin(hostname());
    // Unknown filter names fail before any plugin is built.
    opts.filters.check(&Suite::load(&opts.suite)?)?;
    let search =
        plugins::PluginSearch::new(Some(opts.plugin_profile.clone()), opts.plugin_dir.clone());
    let (mut suite, libraries, descriptors, origins) = prepare(&opts.suite, &search)?;
    opts.filters.apply_limit(&mut suite);
    let cells = selected_cells(&suite, opts);
    let plugins = manifest_plugins(&libraries, &descriptors, &origins);
    let dir = match (&opts.resume, &opts.out) {
        (Some(dir), _) => resume_dir(dir, opts, &suite, &plugins)?,
        (None, out) => new_run_dir(out.as_deref(), &suite, plugins, cells.len())?,
    };
    record_filters(&dir, &opts.filters, opts.resume.is_some())?;
    let todo = unfinished(&dir, &cells)?;

    let jobs = opts
        .jobs
        .unwrap_or_else(|| default_jobs(&descriptors))
        .clamp(1, todo.len().max(1));
    (session.jobs, session.cells) = (jobs, todo.len());
    // Recorded now, so that a run killed halfway still says how its cells were timed.
    update_session(&dir, &session)?;
    let units = training::units(todo.iter().copied());
    let progress = Progress::new(
        &todo.iter().map(|c| cell_cost(c)).collect::<Vec<_>>(),
        &units
            .iter()
            .map(|u| training_cost(u.spec(), u.length))
            .collect::<Vec<_>>(),
    );
    let trained = training::ensure_trained(
        &units,
        &libraries,
        &descriptors,
        &opts.checkpoints,
        Some(&dir),
        &progress,
        suite.memory_limit,
    )?;
    if jobs > 1 {
        tracing::info!("{jobs} cells at a time (--jobs); timings share the machine's cores");
    }
    let context = CellContext {
        libraries: &libraries,
        descriptors: &descriptors,
        trained: &trained,
        scratch: dir.path.join("work"),
        memory_limit: suite.memory_limit,
        progress: &progress,
    };
    let (ok, failed) = context.run_all(todo, jobs, &dir)?;
    progress.clear();
    crate::likelihood::run(&dir, &suite, &cells, &libraries, &trained)?;

    session.finish();
    update_session(&dir, &session)?;
    let mut manifest = dir.read_manifest()?;
    manifest.finished_at = Some(now_rfc3339());
    dir.write_manifest(&manifest)?;
    let summary = report::write_all(&dir, Some(&cells))?;
    // Said here too, not only in the report: a verdict without its AR baseline is easy to miss.
    for warning in report::baseline_warnings(&summary, &opts.filters) {
        eprintln!("warning: {}", warning.message);
    }
    progress.finish(started.elapsed());
    let failed_total = summary
        .iter()
        .filter(|s| s.status == CellStatus::Failed)
        .count();
    Ok(RunOutcome {
        dir: dir.path.clone(),
        ok,
        failed: failed_total.max(failed),
        skipped: cells.len() - ok - failed,
        summary,
    })
}

/// The cells this invocation is for: the suite's, or its shard's, less those the filters drop.
fn selected_cells(suite: &Suite, opts: &RunOptions) -> Vec<CellSpec> {
    let cells = match opts.shard.or_else(crate::shard::Shard::from_slurm) {
        Some(shard) => {
            let all_cells = suite.work_cells();
            let mine = shard.select(&all_cells);
            tracing::info!(
                "shard {}/{}: {} of the suite's {} cells",
                shard.index,
                shard.count,
                mine.len(),
                all_cells.len()
            );
            mine
        }
        None => suite.cells(),
    };
    cells
        .into_iter()
        .filter(|c| opts.filters.keeps(c))
        .collect()
}

/// The cells the run directory holds no finished result of (a new run: all of them).
fn unfinished<'a>(dir: &RunDir, cells: &'a [CellSpec]) -> Result<Vec<&'a CellSpec>> {
    let (previous, _) = dir.load_consistent()?;
    let done: HashSet<String> = previous
        .iter()
        .filter(|c| c.status == CellStatus::Ok)
        .map(|c| c.unit.clone())
        .collect();
    let todo: Vec<_> = cells
        .iter()
        .filter(|c| !done.contains(&c.unit_id()))
        .collect();
    tracing::info!(
        "run {}: {} cells, {} already finished, {} to run",
        dir.path.display(),
        cells.len(),
        cells.len() - todo.len(),
        todo.len()
    );
    Ok(todo)
}

/// The plugins the manifest records: every library whose descriptor could be read.
fn manifest_plugins(
    libraries: &BTreeMap<PluginRef, PathBuf>,
    descriptors: &Descriptors,
    origins: &plugins::Origins,
) -> Vec<ManifestPlugin> {
    libraries
        .iter()
        .filter_map(|(r, lib)| match descriptors.get(r) {
            Some(Ok(d)) => Some(ManifestPlugin {
                reference: r.to_string(),
                library: lib.clone(),
                name: d.name.clone(),
                version: d.version.clone(),
                api_version: d.api_version.clone(),
                device: d.device.clone(),
                origin: origins.get(r).copied(),
            }),
            _ => None,
        })
        .collect()
}

/// Reopen a run to finish it: only when its suite and plugin versions are unchanged, so that
/// its results never mix versions.
fn resume_dir(
    dir: &Path,
    opts: &RunOptions,
    suite: &Suite,
    plugins: &[ManifestPlugin],
) -> Result<RunDir> {
    let run = RunDir::open(dir)?;
    let old = run.read_manifest()?;
    if old.suite_hash != suite.hash {
        anyhow::bail!(
            "cannot resume {}: the suite {} changed since that run started (hash {} then, {} now); start a new run",
            dir.display(),
            opts.suite.display(),
            &old.suite_hash[..12],
            &suite.hash[..12]
        );
    }
    for p in plugins {
        if let Some(o) = old.plugins.iter().find(|o| o.name == p.name) {
            if o.version != p.version {
                anyhow::bail!(
                    "cannot resume {}: plugin `{}` was version {} when the run started and is {} now; results would mix versions — start a new run",
                    dir.display(), p.name, o.version, p.version
                );
            }
        }
    }
    Ok(run)
}

/// Write the run's filters into its manifest; a resumed run must keep the filters it started
/// with, so that it neither mixes parts of the suite nor passes for a full run.
fn record_filters(dir: &RunDir, filters: &crate::filter::RunFilters, resumed: bool) -> Result<()> {
    let mut manifest = dir.read_manifest()?;
    if resumed {
        if manifest.filters != *filters {
            anyhow::bail!(
                "cannot resume {}: it was started with filters `{}` and is resumed with `{}`; resume with the same --tasks/--models/--limit",
                dir.path.display(),
                manifest.filters.describe(),
                filters.describe()
            );
        }
        return Ok(());
    }
    manifest.filters = filters.clone();
    dir.write_manifest(&manifest)
}

/// Add this invocation's session to the manifest, or update it (the one with its start time):
/// a resumed run keeps the sessions before it and adds its own. An invocation that finds
/// nothing left to run timed nothing and adds no session.
fn update_session(dir: &RunDir, session: &RunSession) -> Result<()> {
    if session.cells == 0 {
        return Ok(());
    }
    let mut manifest = dir.read_manifest()?;
    match manifest
        .sessions
        .iter_mut()
        .find(|s| s.started_at == session.started_at && s.host == session.host)
    {
        Some(recorded) => *recorded = session.clone(),
        None => manifest.sessions.push(session.clone()),
    }
    dir.write_manifest(&manifest)
}

fn hostname() -> String {
    command_output("hostname", &[], Path::new(".")).unwrap_or_else(|| "unknown".into())
}

/// Create the run directory (default `reports/<suite>-<timestamp>`) and write its manifest.
fn new_run_dir(
    out: Option<&Path>,
    suite: &Suite,
    plugins: Vec<ManifestPlugin>,
    cells_total: usize,
) -> Result<RunDir> {
    let path = out.map(Path::to_path_buf).unwrap_or_else(|| {
        let stamp = time::OffsetDateTime::now_utc()
            .format(&time::macros::format_description!(
                "[year][month][day]-[hour][minute][second]"
            ))
            .unwrap_or_default();
        PathBuf::from("reports").join(format!("{}-{stamp}", suite.name))
    });
    let run = RunDir::create(&path)?;
    run.write_manifest(&new_manifest(suite, plugins, cells_total))?;
    Ok(run)
}

/// The identity of a new run: harness version and commit, suite, plugins, machine.
fn new_manifest(suite: &Suite, plugins: Vec<ManifestPlugin>, cells_total: usize) -> Manifest {
    let suite_dir = suite
        .source
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let checkout = plugins::harness_checkout();
    let mut devices: Vec<String> = plugins.iter().map(|p| p.device.clone()).collect();
    devices.sort();
    devices.dedup();
    Manifest {
        dlm_bench_version: env!("CARGO_PKG_VERSION").to_string(),
        // The commit of the harness's own checkout (what measured), else of the suite's folder.
        git_commit: command_output("git", &["rev-parse", "HEAD"], &checkout)
            .or_else(|| command_output("git", &["rev-parse", "HEAD"], suite_dir)),
        git_dirty: command_output("git", &["status", "--porcelain"], &checkout)
            .or_else(|| command_output("git", &["status", "--porcelain"], suite_dir))
            .map(|s| !s.is_empty()),
        suite_name: suite.name.clone(),
        suite_path: suite.source.path.clone(),
        suite_hash: suite.hash.clone(),
        suite_text: suite.source.text.clone(),
        device: devices.join(", "),
        plugins,
        toolchain: command_output(
            &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
            &["--version"],
            Path::new("."),
        )
        .unwrap_or_else(|| "unknown".into()),
        host: hostname(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        seeds: suite.seeds.clone(),
        cells_total,
        started_at: now_rfc3339(),
        finished_at: None,
        command: std::env::args().collect(),
        filters: Default::default(),
        text_cells: Vec::new(),
        sessions: Vec::new(),
    }
}

/// One worker slot's bar: the samples of the cell it runs.
fn sample_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>8} [{bar:30}] {pos}/{len} samples  ETA {eta}  {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// What every cell of a run needs to start its worker.
struct CellContext<'a> {
    libraries: &'a BTreeMap<PluginRef, PathBuf>,
    descriptors: &'a Descriptors,
    trained: &'a BTreeMap<String, std::result::Result<training::TrainRecord, String>>,
    scratch: PathBuf,
    memory_limit: crate::suite::MemoryLimit,
    progress: &'a Progress,
}

impl CellContext<'_> {
    /// Run `todo` in `jobs` workers at once and record each cell as it finishes: the counts of
    /// cells that finished and that failed.
    fn run_all(&self, todo: Vec<&CellSpec>, jobs: usize, dir: &RunDir) -> Result<(usize, usize)> {
        let (mut ok, mut failed) = (0, 0);
        // Workers take cells from one queue; only this thread writes the run directory, in the
        // order cells finish (the summary is ordered by the suite, so results do not depend on
        // it).
        let queue = std::sync::Mutex::new(todo.into_iter());
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| -> Result<()> {
            let (tx, rx) = std::sync::mpsc::channel::<Result<(CellRecord, Vec<SampleRecord>)>>();
            for _ in 0..jobs {
                let (tx, queue, stop) = (tx.clone(), &queue, &stop);
                let bar = self.progress.bars().add(sample_bar());
                scope.spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let Some(cell) = queue.lock().ok().and_then(|mut q| q.next()) else {
                            break;
                        };
                        bar.set_message(cell.key());
                        if tx.send(self.run_cell(cell, &bar)).is_err() {
                            break;
                        }
                    }
                    bar.finish_and_clear();
                });
            }
            drop(tx);
            for result in rx {
                let recorded = result.and_then(|(record, samples)| {
                    self.report_finished(&record);
                    match record.status {
                        CellStatus::Ok => ok += 1,
                        CellStatus::Failed => failed += 1,
                    }
                    dir.append_cell(&samples, &record).with_context(|| {
                        format!("cannot record the results of cell {}", record.key)
                    })
                });
                if let Err(e) = recorded {
                    // Let the workers finish their cells and take no more.
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Err(e);
                }
            }
            Ok(())
        })?;
        Ok((ok, failed))
    }

    /// A finished cell's progress line; the whole cause in the log when the line shortens it.
    fn report_finished(&self, record: &CellRecord) {
        let cause = record.cause.as_deref();
        self.progress
            .cell_finished(&record.cell, record.worker_seconds, cause);
        if let Some(cause) = cause.filter(|c| short_cause(c) != c.trim()) {
            tracing::warn!("cell {} failed: {cause}", record.key);
        }
    }

    /// Run one cell in its worker (or record why it cannot run): its record and samples.
    fn run_cell(
        &self,
        cell: &CellSpec,
        bar: &ProgressBar,
    ) -> Result<(CellRecord, Vec<SampleRecord>)> {
        let started = Instant::now();
        let (unit, cost) = (cell.unit_id(), cell_cost(cell));
        let outcome = match cell_job(cell, self.libraries, self.descriptors, self.trained) {
            // Its plugin could not be loaded or its model not trained: the cause says which.
            Err(cause) => Outcome::Failed(cause, None),
            Ok(job) => {
                bar.reset();
                bar.set_length(cell.n as u64);
                worker::run_job(
                    &job,
                    &self.scratch,
                    &cell.unit_id(),
                    worker::Limits::new(
                        Duration::from_secs_f64(cell.timeout_seconds),
                        self.memory_limit,
                    ),
                    |phase, done, total, _| {
                        self.progress.advance(&unit, cost, done, total);
                        bar.set_prefix(phase.to_string());
                        bar.set_length(total as u64);
                        bar.set_position(done as u64);
                    },
                )?
            }
        };
        cell_results(cell, outcome, started.elapsed().as_secs_f64())
    }
}

/// The worker job of a cell, or why it cannot run (a plugin that did not load, a training
/// that failed).
fn cell_job(
    cell: &CellSpec,
    libraries: &BTreeMap<PluginRef, PathBuf>,
    descriptors: &Descriptors,
    trained: &BTreeMap<String, std::result::Result<training::TrainRecord, String>>,
) -> std::result::Result<Job, String> {
    let broken = std::iter::once(&cell.task.plugin)
        .chain(cell.model.as_ref().map(|m| &m.plugin))
        .find_map(|r| match descriptors.get(r) {
            Some(Err(cause)) => Some(format!("plugin {r} could not be loaded: {cause}")),
            _ => None,
        });
    if let Some(cause) = broken {
        return Err(cause);
    }
    let checkpoint = match training::unit_of(cell) {
        None => None,
        Some(u) => match trained.get(&u.key()) {
            Some(Ok(record)) => Some(record.checkpoint_ref()),
            Some(Err(cause)) => return Err(format!("training {} failed: {cause}", u.key())),
            None => return Err(format!("training {} did not run", u.key())),
        },
    };
    Ok(Job::Cell {
        cell: Box::new(cell.clone()),
        task_library: libraries[&cell.task.plugin].clone(),
        model_library: cell.model.as_ref().map(|m| libraries[&m.plugin].clone()),
        checkpoint,
    })
}

/// The cell's record and samples from the worker's outcome.
fn cell_results(
    cell: &CellSpec,
    outcome: Outcome,
    worker_seconds: f64,
) -> Result<(CellRecord, Vec<SampleRecord>)> {
    let (unit, key) = (cell.unit_id(), cell.key());
    let mut record = CellRecord {
        unit: unit.clone(),
        key: key.clone(),
        cell: cell.clone(),
        status: CellStatus::Failed,
        cause: None,
        task_description: None,
        task_plugin: None,
        model_plugin: None,
        model_autoregressive: false,
        model_exact: false,
        error_kind: None,
        one_step_per_token: false,
        batches: Vec::new(),
        device: None,
        settings: None,
        documents: None,
        worker_seconds,
        finished_at: now_rfc3339(),
    };
    let samples = match outcome {
        Outcome::Finished(output) => {
            record.status = CellStatus::Ok;
            record.task_description = Some(output.task_description);
            record.task_plugin = Some(output.task_plugin);
            record.model_plugin = output.model_plugin;
            record.model_autoregressive = output.model_autoregressive;
            record.model_exact = output.model_exact;
            record.one_step_per_token = output.one_step_per_token;
            record.batches = output.batches;
            record.device = output.device;
            record.settings = output.settings;
            record.documents = output.documents;
            output
                .samples
                .into_iter()
                .map(|s| {
                    SampleRecord::new(
                        &unit,
                        &key,
                        s.index,
                        s.tokens,
                        s.score,
                        s.nfe,
                        s.generated_tokens,
                    )
                    .with_work(s.positions_computed, s.edits)
                    .with_trace(s.trace)
                })
                .collect()
        }
        Outcome::Failed(cause, kind) => {
            record.cause = Some(cause);
            record.error_kind = kind;
            Vec::new()
        }
        Outcome::Described(_) | Outcome::Trained(_) => {
            anyhow::bail!("worker answered a cell job with something else")
        }
    };
    Ok((record, samples))
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "dlm-bench-{}-{}",
        std::process::id(),
        now_rfc3339().replace(':', "")
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `dlm-bench train`: train (or find in the cache) every model of the suite that has `train:`,
/// without sampling. Returns the records and the failures.
pub fn train_only(
    suite_path: &Path,
    search: &plugins::PluginSearch,
    checkpoints: &Path,
) -> Result<Vec<(String, std::result::Result<training::TrainRecord, String>)>> {
    let (suite, libraries, descriptors, _) = prepare(suite_path, search)?;
    let cells = suite.cells();
    let units = training::units(cells.iter());
    if units.is_empty() {
        anyhow::bail!(
            "suite {} has no model with `train:`; nothing to train",
            suite_path.display()
        );
    }
    let started = Instant::now();
    let costs: Vec<f64> = units
        .iter()
        .map(|u| training_cost(u.spec(), u.length))
        .collect();
    let progress = Progress::new(&[], &costs);
    let mut results = training::ensure_trained(
        &units,
        &libraries,
        &descriptors,
        checkpoints,
        None,
        &progress,
        suite.memory_limit,
    )?;
    progress.clear();
    progress.finish(started.elapsed());
    Ok(units
        .iter()
        .map(|u| {
            let key = u.key();
            let r = results
                .remove(&key)
                .unwrap_or_else(|| Err("not trained".into()));
            (key, r)
        })
        .collect())
}
