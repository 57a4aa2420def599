//! The run directory: the append-only source of truth and what is derived from it.
//!
//! * `manifest.json` — the run's identity (commit, suite and hash, plugins, device, toolchain,
//!   seeds, start/end time).
//! * `samples.jsonl` — one line per generated sample, appended when its cell finishes.
//! * `cells.jsonl` — one line per finished cell attempt (ok or failed, with the cause),
//!   appended *after* the cell's samples, so a cell is finished iff its `ok` line exists.
//! * `summary.json`, `report.html` — derived, rewritten at the end of a run or by `report`.
//!
//! A crash can leave a cell's samples without its `cells.jsonl` line, or a torn last line;
//! [`RunDir::load_consistent`] drops both (those cells are simply redone on `--resume`).

use crate::suite::CellSpec;
use anyhow::{Context, Result};
use dlm_plugin_api::{ErrorKind, SampleScore, TaskDescription};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

mod machine;
pub use machine::{shared_cores_note, timing_line, RunSession};

pub const MANIFEST: &str = "manifest.json";
pub const SAMPLES: &str = "samples.jsonl";
pub const CELLS: &str = "cells.jsonl";
pub const SUMMARY: &str = "summary.json";
pub const REPORT: &str = "report.html";

/// Name and version of a plugin as its descriptor reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginId {
    pub name: String,
    pub version: String,
}

/// A plugin as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestPlugin {
    /// How the suite names it (`crate `x`` or a path).
    pub reference: String,
    pub library: PathBuf,
    pub name: String,
    pub version: String,
    pub api_version: String,
    pub device: String,
    /// How the run found the library: built by cargo, found prebuilt in a plugin folder, or
    /// named by path (absent in runs written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<LibraryOrigin>,
}

/// How a run found a plugin's library ([`ManifestPlugin::origin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LibraryOrigin {
    /// Built by `cargo build -p` in a source checkout (cargo decided what was stale).
    Built,
    /// Found prebuilt in a plugin folder (`--plugin-dir`, `$DLM_BENCH_PLUGIN_DIR`, or the
    /// binary's own folder); cargo was not run for it.
    Prebuilt,
    /// Named by its path in the suite and used as given.
    Path,
}

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub dlm_bench_version: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub suite_name: String,
    pub suite_path: PathBuf,
    pub suite_hash: String,
    pub suite_text: String,
    pub plugins: Vec<ManifestPlugin>,
    pub device: String,
    pub toolchain: String,
    pub host: String,
    pub cpus: usize,
    pub seeds: Vec<u64>,
    pub cells_total: usize,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub command: Vec<String>,
    /// `run --tasks/--models/--limit`: the part of the suite this run covers (absent: all).
    #[serde(default, skip_serializing_if = "crate::filter::RunFilters::is_empty")]
    pub filters: crate::filter::RunFilters,
    /// Per text cell, what its numbers rest on ([`TextCellRun`]); filled from `cells.jsonl`
    /// whenever the summary is written (end of a run, `merge`, `report`). Absent in runs
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_cells: Vec<TextCellRun>,
    /// Every invocation that ran cells of this run (the first, each `--resume`; a merge
    /// keeps every shard's): `--jobs`, CPU model, cores, load at start and end
    /// ([`RunSession`]). `started_at` above stays the first start. Absent in older runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<RunSession>,
}

/// How generation is counted in every text cell (ARCHITECTURE.md, `TextTaskInfo`): recorded
/// with the cells so that a run record states it.
pub const TEXT_COUNTING: &str = "tokens per forward = generated tokens up to the end-of-text or \
     stop string ÷ network calls (NFE); prompt and padding tokens are never counted as generated";

/// What the manifest records of one text cell, so that its numbers can stand next to a
/// published table: the task's provenance (data files and sums, template, few-shot count,
/// filters, scoring mode), the model and the sampler as the suite gives them, the device the
/// model ran on, and `settings`: what the model says it ran with, every default filled in
/// (the model's dtype, device, …; the sampler's steps and every parameter).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextCellRun {
    pub key: String,
    pub unit: String,
    pub task: ComponentRun,
    /// `None` when the task declares none (plugins before API 1.5).
    pub provenance: Option<dlm_plugin_api::TaskProvenance>,
    /// `None` for the reference row (the task's own reference completions).
    pub model: Option<ComponentRun>,
    pub sampler: Option<dlm_plugin_api::SamplerSpec>,
    /// The device the model reported for its batches.
    pub device: Option<String>,
    /// The model's reply's resolved settings ([`CellRecord::settings`]): `{"model": {dtype,
    /// device, …}, "sampler": {name, steps, params: {…}}}`; `None` for the reference row and
    /// a model that does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    pub length: usize,
    pub seed: u64,
    pub n: usize,
    pub batch_size: usize,
    pub counting: String,
}

/// A task or model of a [`TextCellRun`]: its names, plugin and configuration as the suite
/// gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentRun {
    /// The name in the suite.
    pub name: String,
    /// The component inside the plugin.
    pub component: String,
    /// The plugin's name and version as its descriptor reported them (`None` when the cell
    /// failed before loading it).
    pub plugin: Option<PluginId>,
    pub config: serde_json::Value,
}

impl TextCellRun {
    /// The record of `cell`, or `None` when it is not a text cell (or never described its task).
    pub fn of(cell: &CellRecord) -> Option<TextCellRun> {
        let description = cell.task_description.as_ref()?;
        description.text.as_ref()?;
        let spec = &cell.cell;
        let component = |c: &crate::suite::ComponentSpec, plugin: &Option<PluginId>| ComponentRun {
            name: c.name.clone(),
            component: c.component.clone(),
            plugin: plugin.clone(),
            config: c.config.clone(),
        };
        Some(TextCellRun {
            key: cell.key.clone(),
            unit: cell.unit.clone(),
            task: component(&spec.task, &cell.task_plugin),
            provenance: description.provenance.clone(),
            model: spec
                .model
                .as_ref()
                .map(|m| component(m, &cell.model_plugin)),
            sampler: spec.sampler.clone(),
            device: cell.device.clone(),
            settings: cell.settings.clone(),
            length: spec.length,
            seed: spec.seed,
            n: spec.n,
            batch_size: spec.batch_size,
            counting: TEXT_COUNTING.to_string(),
        })
    }
}

/// One line of `samples.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    pub unit: String,
    pub key: String,
    pub index: u64,
    pub tokens: Vec<u32>,
    pub log_q: Option<f64>,
    pub in_support: bool,
    #[serde(default)]
    pub first_invalid: Option<usize>,
    #[serde(default)]
    pub invalid_transitions: usize,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// Network calls this sample needed (0 for ground-truth rows).
    pub nfe: u64,
    pub generated_tokens: u64,
    /// Query positions the network computed for this sample, summed over its calls (a full
    /// forward computes the whole length, a cached step its window); absent when the model
    /// does not count them (then every call was a full forward) and in runs before API 1.7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions_computed: Option<u64>,
    /// Commits beyond the first at a position (a re-masked token generated again, or a token
    /// replaced by an edit); absent when the sampler does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<u64>,
    /// The prompt template the sample's prompt was written in (`SampleScore::template`);
    /// absent where the task has one template and in runs before API 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The sample's trajectory (suite `trace: true`, `crate::trace`); absent otherwise and in
    /// runs before API 1.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceRecord>,
}

impl SampleRecord {
    pub fn new(
        unit: &str,
        key: &str,
        index: u64,
        tokens: Vec<u32>,
        score: SampleScore,
        nfe: u64,
        generated_tokens: u64,
    ) -> Self {
        SampleRecord {
            unit: unit.to_string(),
            key: key.to_string(),
            index,
            tokens,
            log_q: score.log_q,
            in_support: score.in_support,
            first_invalid: score.first_invalid,
            invalid_transitions: score.invalid_transitions,
            extra: score.extra,
            nfe,
            generated_tokens,
            positions_computed: None,
            edits: None,
            template: score.template,
            trace: None,
        }
    }

    /// The same record with the positions computed and edits the model reported.
    pub fn with_work(mut self, positions_computed: Option<u64>, edits: Option<u64>) -> Self {
        self.positions_computed = positions_computed;
        self.edits = edits;
        self
    }

    /// The same record with its trajectory (`trace: true`).
    pub fn with_trace(mut self, trace: Option<crate::trace::TraceRecord>) -> Self {
        self.trace = trace;
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    Ok,
    Failed,
}

/// Timing and accounting of one `generate` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub first_index: u64,
    pub size: usize,
    pub nfe: u64,
    /// Query positions computed over all of the call's forwards (`GenerateReply::
    /// batch_positions`); absent when the model does not count them and in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions: Option<u64>,
    pub wall_seconds: f64,
    /// CPU seconds the worker process spent in the call (all threads); absent in old runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
}

/// One line of `cells.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub unit: String,
    pub key: String,
    pub cell: CellSpec,
    pub status: CellStatus,
    pub cause: Option<String>,
    /// What kind of failure a failed cell met (see [`ErrorKind`]); `None` when it did not fail,
    /// did not run (its plugin did not load, its model was not trained) or its worker itself
    /// failed (a crash, a limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    pub task_description: Option<TaskDescription>,
    pub task_plugin: Option<PluginId>,
    pub model_plugin: Option<PluginId>,
    #[serde(default)]
    pub model_autoregressive: bool,
    /// The model is the task's exact denoiser (capability `oracle`): the theorem checks run
    /// on its cells only.
    #[serde(default)]
    pub model_exact: bool,
    /// The sampler decodes one token per step, as the model plugin describes it (left-to-right
    /// decoding or an AR model's sampler): such cells are the AR baselines.
    #[serde(default)]
    pub one_step_per_token: bool,
    #[serde(default)]
    pub batches: Vec<BatchRecord>,
    pub device: Option<String>,
    /// What the model said it generated with, every default filled in
    /// (`GenerateReply::settings`); `None` for ground-truth rows and models that do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// Text cells whose suite selects documents (`doc_ids:`, `docs_from_replay:`): how many
    /// of the task's documents were scored ("N of M documents").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<crate::suite::DocumentCount>,
    /// Seconds the worker process lived (start-up, loading, generation, scoring).
    pub worker_seconds: f64,
    pub finished_at: String,
}

/// The lock file that marks a run directory as in use by one process.
pub const LOCK: &str = "run.lock";

/// The current time as RFC 3339 (UTC), as every record of a run stamps it.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A run directory. Opened for writing ([`RunDir::create`], [`RunDir::open`]) it holds an
/// exclusive advisory lock on `run.lock` for its whole life, so two processes never append to
/// (or rewrite) the same files; the kernel drops the lock when its holder dies, so a killed run
/// never leaves a stale lock behind. Opened read-only it takes no lock and never rewrites.
pub struct RunDir {
    pub path: PathBuf,
    /// `Some` while this process holds the directory's lock.
    lock: Option<File>,
}

impl RunDir {
    pub fn create(path: &Path) -> Result<RunDir> {
        if path.join(MANIFEST).exists() {
            anyhow::bail!(
                "{} already holds a run; continue it with `--resume {}` or choose another `--out`",
                path.display(),
                path.display()
            );
        }
        std::fs::create_dir_all(path.join("work"))
            .with_context(|| format!("cannot create run directory {}", path.display()))?;
        let lock = lock_dir(path)?;
        if path.join(MANIFEST).exists() {
            // Another process created the run between our check and our lock.
            anyhow::bail!(
                "{} already holds a run; continue it with `--resume {}` or choose another `--out`",
                path.display(),
                path.display()
            );
        }
        Ok(RunDir {
            path: path.to_owned(),
            lock: Some(lock),
        })
    }

    pub fn open(path: &Path) -> Result<RunDir> {
        if !path.join(MANIFEST).exists() {
            anyhow::bail!(
                "{} is not a dlm-bench run directory (no {MANIFEST}); pass the directory a previous `dlm-bench run` wrote",
                path.display()
            );
        }
        std::fs::create_dir_all(path.join("work"))?;
        let lock = lock_dir(path)?;
        Ok(RunDir {
            path: path.to_owned(),
            lock: Some(lock),
        })
    }

    /// Open a run directory to read it (compare, history): no lock, and [`Self::load_consistent`]
    /// filters unfinished cells in memory without rewriting anything, so reading a run that is
    /// still going is safe.
    pub fn open_read_only(path: &Path) -> Result<RunDir> {
        if !path.join(MANIFEST).exists() {
            anyhow::bail!(
                "{} is not a dlm-bench run directory (no {MANIFEST}); pass the directory a previous `dlm-bench run` wrote",
                path.display()
            );
        }
        Ok(RunDir {
            path: path.to_owned(),
            lock: None,
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn write_manifest(&self, m: &Manifest) -> Result<()> {
        write_atomic(&self.file(MANIFEST), &serde_json::to_vec_pretty(m)?)
    }

    pub fn read_manifest(&self) -> Result<Manifest> {
        let text = std::fs::read_to_string(self.file(MANIFEST))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is corrupt", self.file(MANIFEST).display()))
    }

    /// Append a finished cell: its samples first, then its cell line, each synced to disk.
    pub fn append_cell(&self, samples: &[SampleRecord], cell: &CellRecord) -> Result<()> {
        self.append_cells(&[(samples, cell)])
    }

    /// Append finished cells at once: all their samples, then all their cell lines, each file
    /// synced once (a merge writes 100,000 cells; two syncs per cell took most of its time).
    /// A crash in between leaves samples without cell lines, which `load_consistent` drops.
    pub fn append_cells(&self, cells: &[(&[SampleRecord], &CellRecord)]) -> Result<()> {
        let (mut samples, mut lines) = (Vec::new(), Vec::new());
        for (cell_samples, cell) in cells {
            for s in cell_samples.iter() {
                serde_json::to_writer(&mut samples, s)?;
                samples.push(b'\n');
            }
            serde_json::to_writer(&mut lines, cell)?;
            lines.push(b'\n');
        }
        if !samples.is_empty() {
            append_synced(&self.file(SAMPLES), &samples)?;
        }
        if !lines.is_empty() {
            append_synced(&self.file(CELLS), &lines)?;
        }
        Ok(())
    }

    /// Read the results, dropping torn lines, samples of cells that never finished, and cells
    /// whose `ok` line exists but whose samples are incomplete (a crash can tear the last sample
    /// row after an earlier attempt's cell line, or a file can be truncated): such a cell is
    /// not finished, so it is dropped and redone on `--resume`. When this process holds the
    /// lock and anything was dropped, both files are rewritten (new file, then rename, so a
    /// crash mid-rewrite keeps the old file whole). Returns the latest record of every cell and
    /// the samples of the `ok` ones.
    pub fn load_consistent(&self) -> Result<(Vec<CellRecord>, Vec<SampleRecord>)> {
        let (cell_lines, torn_cells) = read_jsonl::<CellRecord>(&self.file(CELLS))?;
        // The latest record of a unit wins (a failed cell may later be retried and succeed).
        let mut latest: BTreeMap<String, (usize, CellRecord)> = BTreeMap::new();
        for (i, c) in cell_lines.into_iter().enumerate() {
            latest.insert(c.unit.clone(), (i, c));
        }
        let mut cells: Vec<(usize, CellRecord)> = latest.into_values().collect();
        cells.sort_by_key(|(i, _)| *i);
        let mut cells: Vec<CellRecord> = cells.into_iter().map(|(_, c)| c).collect();
        let (sample_lines, torn_samples) = read_jsonl::<SampleRecord>(&self.file(SAMPLES))?;
        let total = sample_lines.len();
        // Distinct sample indices in the cell's range per unit: an `ok` cell is finished only
        // with all.
        let mut seen = HashSet::new();
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        let range_of: BTreeMap<&str, std::ops::Range<usize>> = cells
            .iter()
            .map(|c| (c.unit.as_str(), c.cell.sample_range()))
            .collect();
        for s in &sample_lines {
            if let Some(range) = range_of.get(s.unit.as_str()) {
                if range.contains(&(s.index as usize)) && seen.insert((s.unit.as_str(), s.index)) {
                    *count.entry(s.unit.as_str()).or_default() += 1;
                }
            }
        }
        let incomplete: HashSet<String> = cells
            .iter()
            .filter(|c| {
                c.status == CellStatus::Ok
                    && count.get(c.unit.as_str()).copied().unwrap_or(0) != c.cell.n
            })
            .map(|c| c.unit.clone())
            .collect();
        let cells_before = cells.len();
        cells.retain(|c| !incomplete.contains(&c.unit));
        let ok: HashSet<String> = cells
            .iter()
            .filter(|c| c.status == CellStatus::Ok)
            .map(|c| c.unit.clone())
            .collect();
        let mut seen = HashSet::new();
        let samples: Vec<SampleRecord> = sample_lines
            .into_iter()
            .filter(|s| ok.contains(&s.unit) && seen.insert((s.unit.clone(), s.index)))
            .collect();
        if torn_cells || torn_samples || samples.len() != total || cells.len() != cells_before {
            tracing::warn!(
                "run directory {} had {} unfinished or torn sample rows and {} incomplete cells; dropping them (those cells will be redone on --resume)",
                self.path.display(),
                total - samples.len() + usize::from(torn_samples),
                incomplete.len()
            );
            if self.lock.is_some() {
                rewrite_jsonl(&self.file(SAMPLES), &samples)?;
                rewrite_jsonl(&self.file(CELLS), &cells)?;
            }
        }
        Ok((cells, samples))
    }
}

/// Take the run directory's exclusive lock, or say which process holds it. The lock is an
/// advisory `flock` on `run.lock`: it dies with its holder, so no stale lock survives a crash.
fn lock_dir(path: &Path) -> Result<File> {
    let lock_path = path.join(LOCK);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&lock_path).unwrap_or_default();
            let holder = holder.trim();
            anyhow::bail!(
                "run directory {} is in use by {} (another dlm-bench run, --resume or report); wait for it to finish or choose another --out",
                path.display(),
                if holder.is_empty() {
                    "another process".to_string()
                } else {
                    format!("PID {holder}")
                }
            );
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()))
        }
    }
    file.set_len(0)?;
    write!(file, "{}", std::process::id())?;
    file.sync_data()?;
    Ok(file)
}

fn append_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot append to {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_data()?;
    Ok(())
}

/// Write via a temporary file and rename, so readers never see half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f =
            File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_data()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

fn rewrite_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    let mut buf = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut buf, r)?;
        buf.push(b'\n');
    }
    write_atomic(path, &buf)
}

/// Parse a JSONL file. A line that does not parse is tolerated only as the last line (a torn
/// write); anywhere else it is corruption and an error naming the line.
pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<(Vec<T>, bool)> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let lines: Vec<String> = BufReader::new(file).lines().collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(lines.len());
    let mut torn = false;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(v) => out.push(v),
            Err(_) if i + 1 == lines.len() => torn = true,
            Err(e) => anyhow::bail!(
                "{}:{}: corrupt row ({e}); this file is append-only output of dlm-bench — restore it or start a new run",
                path.display(),
                i + 1
            ),
        }
    }
    Ok((out, torn))
}
