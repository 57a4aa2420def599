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
use dlm_plugin_api::{SampleScore, TaskDescription};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

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
        }
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
    pub wall_seconds: f64,
}

/// One line of `cells.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub unit: String,
    pub key: String,
    pub cell: CellSpec,
    pub status: CellStatus,
    pub cause: Option<String>,
    pub task_description: Option<TaskDescription>,
    pub task_plugin: Option<PluginId>,
    pub model_plugin: Option<PluginId>,
    #[serde(default)]
    pub model_autoregressive: bool,
    #[serde(default)]
    pub batches: Vec<BatchRecord>,
    pub device: Option<String>,
    /// Seconds the worker process lived (start-up, loading, generation, scoring).
    pub worker_seconds: f64,
    pub finished_at: String,
}

/// A run directory.
pub struct RunDir {
    pub path: PathBuf,
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
        std::fs::create_dir_all(path.join("logs"))?;
        Ok(RunDir {
            path: path.to_owned(),
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
        std::fs::create_dir_all(path.join("logs"))?;
        Ok(RunDir {
            path: path.to_owned(),
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
        if !samples.is_empty() {
            let mut buf = Vec::new();
            for s in samples {
                serde_json::to_writer(&mut buf, s)?;
                buf.push(b'\n');
            }
            append_synced(&self.file(SAMPLES), &buf)?;
        }
        let mut line = serde_json::to_vec(cell)?;
        line.push(b'\n');
        append_synced(&self.file(CELLS), &line)
    }

    /// Read the results, dropping torn lines and samples of cells that never finished, and
    /// rewrite the files if anything was dropped. Returns the latest record of every cell and
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
        let cells: Vec<CellRecord> = cells.into_iter().map(|(_, c)| c).collect();
        let ok: HashSet<&str> = cells
            .iter()
            .filter(|c| c.status == CellStatus::Ok)
            .map(|c| c.unit.as_str())
            .collect();
        let (sample_lines, torn_samples) = read_jsonl::<SampleRecord>(&self.file(SAMPLES))?;
        let total = sample_lines.len();
        let mut seen = HashSet::new();
        let samples: Vec<SampleRecord> = sample_lines
            .into_iter()
            .filter(|s| ok.contains(s.unit.as_str()) && seen.insert((s.unit.clone(), s.index)))
            .collect();
        if torn_cells || torn_samples || samples.len() != total {
            tracing::warn!(
                "run directory {} had {} unfinished or torn sample rows; dropping them (their cells will be redone)",
                self.path.display(),
                total - samples.len() + usize::from(torn_samples)
            );
            rewrite_jsonl(&self.file(SAMPLES), &samples)?;
            rewrite_jsonl(&self.file(CELLS), &cells)?;
        }
        Ok((cells, samples))
    }
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
