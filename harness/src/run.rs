//! Running a suite: resolve and describe plugins, check the suite against them, run every
//! unfinished cell in a worker process, append results as each cell finishes, then write the
//! summary and the report.

use crate::plugins;
use crate::report;
use crate::results::{
    now_rfc3339, CellRecord, CellStatus, Manifest, ManifestPlugin, RunDir, SampleRecord,
};
use crate::suite::{did_you_mean, PluginRef, Suite, SuiteError};
use crate::training;
use crate::worker::{self, Job, Outcome};
use anyhow::{Context, Result};
use dlm_plugin_api::{ComponentKind, PluginDescriptor};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct RunOptions {
    pub suite: PathBuf,
    pub out: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    pub plugin_profile: String,
    /// The checkpoint cache for models with `train:`.
    pub checkpoints: PathBuf,
}

pub struct RunOutcome {
    pub dir: PathBuf,
    pub ok: usize,
    pub failed: usize,
    pub skipped: usize,
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
            if d.component(ComponentKind::Task, &t.component).is_none() {
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
            }
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
                        (false, None) => {
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
    Ok(())
}

/// Load a suite, build and describe its plugins, and check it against them.
pub(crate) fn prepare(
    suite_path: &Path,
    plugin_profile: &str,
) -> Result<(Suite, BTreeMap<PluginRef, PathBuf>, Descriptors)> {
    let suite = Suite::load(suite_path)?;
    let libraries = plugins::resolve(&suite, plugin_profile)?;
    let scratch = tempfile_dir()?;
    let mut descriptors: Descriptors = BTreeMap::new();
    for (r, lib) in &libraries {
        let d = plugins::describe(lib, &scratch)?;
        if let Err(cause) = &d {
            tracing::error!(
                "plugin {r} ({}) cannot be loaded; its cells will fail: {cause}",
                lib.display()
            );
        }
        descriptors.insert(r.clone(), d);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    check_components(&suite, &descriptors)?;
    Ok((suite, libraries, descriptors))
}

pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    let (suite, libraries, descriptors) = prepare(&opts.suite, &opts.plugin_profile)?;

    let cells = suite.cells();
    let manifest_plugins: Vec<ManifestPlugin> = libraries
        .iter()
        .filter_map(|(r, lib)| match descriptors.get(r) {
            Some(Ok(d)) => Some(ManifestPlugin {
                reference: r.to_string(),
                library: lib.clone(),
                name: d.name.clone(),
                version: d.version.clone(),
                api_version: d.api_version.clone(),
                device: d.device.clone(),
            }),
            _ => None,
        })
        .collect();

    let dir = match (&opts.resume, &opts.out) {
        (Some(dir), _) => {
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
            for p in &manifest_plugins {
                if let Some(o) = old.plugins.iter().find(|o| o.name == p.name) {
                    if o.version != p.version {
                        anyhow::bail!(
                            "cannot resume {}: plugin `{}` was version {} when the run started and is {} now; results would mix versions — start a new run",
                            dir.display(), p.name, o.version, p.version
                        );
                    }
                }
            }
            run
        }
        (None, out) => {
            let path = out.clone().unwrap_or_else(|| {
                let stamp = time::OffsetDateTime::now_utc()
                    .format(&time::macros::format_description!(
                        "[year][month][day]-[hour][minute][second]"
                    ))
                    .unwrap_or_default();
                PathBuf::from("reports").join(format!("{}-{stamp}", suite.name))
            });
            let run = RunDir::create(&path)?;
            let suite_dir = suite
                .source
                .path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let checkout = plugins::harness_checkout();
            let manifest = Manifest {
                dlm_bench_version: env!("CARGO_PKG_VERSION").to_string(),
                // The commit of the harness's own checkout (what measured), else of the
                // suite's folder.
                git_commit: command_output("git", &["rev-parse", "HEAD"], &checkout)
                    .or_else(|| command_output("git", &["rev-parse", "HEAD"], suite_dir)),
                git_dirty: command_output("git", &["status", "--porcelain"], &checkout)
                    .or_else(|| command_output("git", &["status", "--porcelain"], suite_dir))
                    .map(|s| !s.is_empty()),
                suite_name: suite.name.clone(),
                suite_path: suite.source.path.clone(),
                suite_hash: suite.hash.clone(),
                suite_text: suite.source.text.clone(),
                device: {
                    let mut devices: Vec<String> =
                        manifest_plugins.iter().map(|p| p.device.clone()).collect();
                    devices.sort();
                    devices.dedup();
                    devices.join(", ")
                },
                plugins: manifest_plugins.clone(),
                toolchain: command_output(
                    &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
                    &["--version"],
                    Path::new("."),
                )
                .unwrap_or_else(|| "unknown".into()),
                host: command_output("hostname", &[], Path::new("."))
                    .unwrap_or_else(|| "unknown".into()),
                cpus: std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1),
                seeds: suite.seeds.clone(),
                cells_total: cells.len(),
                started_at: now_rfc3339(),
                finished_at: None,
                command: std::env::args().collect(),
            };
            run.write_manifest(&manifest)?;
            run
        }
    };

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

    let bars = MultiProgress::new();
    let cell_bar = bars.add(ProgressBar::new(todo.len() as u64));
    cell_bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>8} [{bar:30}] {pos}/{len} cells  {elapsed} elapsed, ETA {eta}  {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    cell_bar.set_prefix("cells");
    let sample_bar = bars.add(ProgressBar::new(0));
    sample_bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} samples  ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );

    let trained = training::ensure_trained(
        &training::units(todo.iter().copied()),
        &libraries,
        &descriptors,
        &opts.checkpoints,
        Some(&dir),
        &bars,
        suite.memory_limit,
    )?;

    let (mut ok, mut failed) = (0, 0);
    for cell in todo {
        let unit = cell.unit_id();
        let key = cell.key();
        cell_bar.set_message(key.clone());
        let started = Instant::now();
        let task_lib = &libraries[&cell.task.plugin];
        let model_lib = cell.model.as_ref().map(|m| libraries[&m.plugin].clone());
        let broken = std::iter::once(&cell.task.plugin)
            .chain(cell.model.as_ref().map(|m| &m.plugin))
            .find_map(|r| match descriptors.get(r) {
                Some(Err(cause)) => Some(format!("plugin {r} could not be loaded: {cause}")),
                _ => None,
            });
        let training = training::unit_of(cell).map(|u| match trained.get(&u.key()) {
            Some(Ok(record)) => Ok(record.checkpoint_ref()),
            Some(Err(cause)) => Err(format!("training {} failed: {cause}", u.key())),
            None => Err(format!("training {} did not run", u.key())),
        });
        let (broken, checkpoint) = match (broken, training) {
            (Some(cause), _) | (None, Some(Err(cause))) => (Some(cause), None),
            (None, Some(Ok(c))) => (None, Some(c)),
            (None, None) => (None, None),
        };
        let outcome = match broken {
            Some(cause) => Outcome::Failed(cause),
            None => {
                let job = Job::Cell {
                    cell: Box::new(cell.clone()),
                    task_library: task_lib.clone(),
                    model_library: model_lib,
                    checkpoint,
                };
                sample_bar.reset();
                sample_bar.set_length(cell.n as u64);
                worker::run_job(
                    &job,
                    &dir.path.join("work"),
                    &unit,
                    worker::Limits::new(
                        Duration::from_secs_f64(cell.timeout_seconds),
                        suite.memory_limit,
                    ),
                    |phase, done, total, _| {
                        sample_bar.set_prefix(phase.to_string());
                        sample_bar.set_length(total as u64);
                        sample_bar.set_position(done as u64);
                    },
                )?
            }
        };
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
            one_step_per_token: false,
            batches: Vec::new(),
            device: None,
            worker_seconds: started.elapsed().as_secs_f64(),
            finished_at: now_rfc3339(),
        };
        let samples: Vec<SampleRecord> = match outcome {
            Outcome::Finished(output) => {
                record.status = CellStatus::Ok;
                record.task_description = Some(output.task_description);
                record.task_plugin = Some(output.task_plugin);
                record.model_plugin = output.model_plugin;
                record.model_autoregressive = output.model_autoregressive;
                record.one_step_per_token = output.one_step_per_token;
                record.batches = output.batches;
                record.device = output.device;
                ok += 1;
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
                    })
                    .collect()
            }
            Outcome::Failed(cause) => {
                bars.suspend(|| tracing::error!("cell {key} failed: {cause}"));
                record.cause = Some(cause);
                failed += 1;
                Vec::new()
            }
            Outcome::Described(_) | Outcome::Trained(_) => {
                anyhow::bail!("worker answered a cell job with something else")
            }
        };
        dir.append_cell(&samples, &record)
            .with_context(|| format!("cannot record the results of cell {key}"))?;
        cell_bar.inc(1);
    }
    sample_bar.finish_and_clear();
    cell_bar.finish_and_clear();

    let mut manifest = dir.read_manifest()?;
    manifest.finished_at = Some(now_rfc3339());
    dir.write_manifest(&manifest)?;
    let summary = report::write_all(&dir, Some(&cells))?;
    let failed_total = summary
        .iter()
        .filter(|s| s.status == CellStatus::Failed)
        .count();
    Ok(RunOutcome {
        dir: dir.path.clone(),
        ok,
        failed: failed_total.max(failed),
        skipped: cells.len() - ok - failed,
    })
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
    plugin_profile: &str,
    checkpoints: &Path,
) -> Result<Vec<(String, std::result::Result<training::TrainRecord, String>)>> {
    let (suite, libraries, descriptors) = prepare(suite_path, plugin_profile)?;
    let cells = suite.cells();
    let units = training::units(cells.iter());
    if units.is_empty() {
        anyhow::bail!(
            "suite {} has no model with `train:`; nothing to train",
            suite_path.display()
        );
    }
    let bars = MultiProgress::new();
    let mut results = training::ensure_trained(
        &units,
        &libraries,
        &descriptors,
        checkpoints,
        None,
        &bars,
        suite.memory_limit,
    )?;
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
