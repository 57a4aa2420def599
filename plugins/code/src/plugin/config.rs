//! The task config: parsed (naming the offending key in every error) and checked (the opt-in
//! first, then every value). The keys are documented in the table of [`super`].
use std::path::PathBuf;
use std::time::Duration;

use dlm_sdk::{PluginError, Result};
use serde::Deserialize;
use serde_json::Value;

use super::Benchmark;
use crate::data::{self, DataDir};
use crate::sandbox::{SandboxConfig, MIN_MEMORY_BYTES};

/// The largest `memory_mb` (1 TiB): more is surely a unit mistake (bytes for MiB).
const MAX_MEMORY_MB: u64 = 1 << 20;

/// The task's `config:` as written in the suite.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CodeConfig {
    #[serde(default)]
    allow_code_execution: bool,
    #[serde(default)]
    data_dir: Option<PathBuf>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    jobs: Option<usize>,
    #[serde(default)]
    timeout_seconds: Option<f64>,
    #[serde(default)]
    shots: Option<usize>,
    #[serde(default)]
    memory_mb: Option<u64>,
    #[serde(default)]
    k: Option<Vec<u64>>,
    #[serde(default)]
    setup_code: Option<bool>,
}

/// The checked settings of a task.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) data: DataDir,
    pub(super) limit: Option<usize>,
    pub(super) shots: usize,
    pub(super) sandbox: SandboxConfig,
    /// The `k` of every pass@k to report, ascending.
    pub(super) ks: Vec<u64>,
    /// `mbpp` only: run `test_setup_code` before the tests (lm-eval's `mbpp` does not).
    pub(super) setup_code: bool,
}

/// pass@k reported when the config gives no `k` (pass@1 and pass@10, as before `k` existed).
pub(super) const DEFAULT_KS: [u64; 2] = [1, 10];

/// The largest `k`: more samples of one problem than any run draws (a guard against typos).
const MAX_K: u64 = 1_000_000;

/// Parses a config, naming the offending key in every error.
pub(super) fn parse_config(benchmark: Benchmark, config: Value) -> Result<CodeConfig> {
    let task = benchmark.name();
    if config.is_null() {
        return Ok(CodeConfig::default());
    }
    serde_json::from_value::<CodeConfig>(config.clone()).map_err(|e| {
        let e = e.to_string();
        // serde names unknown keys but not the key of a value of the wrong type: find it by
        // parsing each key alone.
        let culprit = config.as_object().and_then(|m| {
            m.iter()
                .find(|(k, v)| {
                    let alone = serde_json::Map::from_iter([((*k).clone(), (*v).clone())]);
                    serde_json::from_value::<CodeConfig>(Value::Object(alone)).is_err()
                })
                .map(|(k, _)| k.clone())
        });
        match culprit {
            Some(k) if !e.contains(&format!("`{k}`")) => PluginError::bad_config(format!(
                "{task} config: `{k}`: {e} (keys: {})",
                benchmark.keys()
            )),
            _ => {
                PluginError::bad_config(format!("{task} config: {e} (keys: {})", benchmark.keys()))
            }
        }
    })
}

/// Checks a parsed config: the opt-in first, then every value.
pub(super) fn settings(benchmark: Benchmark, config: CodeConfig) -> Result<Settings> {
    let task = benchmark.name();
    if !config.allow_code_execution {
        return Err(PluginError::bad_config(format!(
            "{task}: code execution is disabled. This task runs model-written Python programs \
             against the benchmark's tests (each in a fresh bubblewrap sandbox: no network, an \
             unprivileged uid, rlimits, a timeout), which needs an explicit opt-in, as \
             lm-evaluation-harness's --confirm_run_unsafe_code: set `allow_code_execution: \
             true` in the task's `config:` in the suite"
        )));
    }
    if config.limit == Some(0) {
        return Err(PluginError::bad_config(format!(
            "{task} config: `limit` must be at least 1"
        )));
    }
    if config.jobs == Some(0) {
        return Err(PluginError::bad_config(format!(
            "{task} config: `jobs` must be at least 1 (omit it for one per core)"
        )));
    }
    let mut sandbox = SandboxConfig::default();
    if let Some(t) = config.timeout_seconds {
        if !(t.is_finite() && t > 0.0 && t <= 3600.0) {
            return Err(PluginError::bad_config(format!(
                "{task} config: `timeout_seconds` must be more than 0 and at most 3600, got {t}"
            )));
        }
        sandbox.timeout = Duration::from_secs_f64(t);
        // The CPU rlimit never cuts a run the wall-clock limit would let finish.
        sandbox.cpu_seconds = sandbox.cpu_seconds.max(t.ceil() as u64);
    }
    if let Some(mb) = config.memory_mb {
        let min = MIN_MEMORY_BYTES >> 20;
        if !(min..=MAX_MEMORY_MB).contains(&mb) {
            return Err(PluginError::bad_config(format!(
                "{task} config: `memory_mb` (the memory cap of one sample's whole sandbox, in \
                 MiB) must be at least {min} and at most {MAX_MEMORY_MB}, got {mb}"
            )));
        }
        sandbox.memory_bytes = mb << 20;
    }
    sandbox.parallelism = match config.jobs {
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let max_shots = data::MBPP_FEWSHOT_IDS.len();
    let shots = match (benchmark.few_shot(), config.shots) {
        (false, Some(_)) => {
            return Err(PluginError::bad_config(format!(
                "{task} config: `shots` is for mbpp and mbpp-sanitized only (HumanEval's \
                 prompt is the function's signature and docstring)"
            )))
        }
        (false, None) => 0,
        (true, None) => max_shots,
        (true, Some(s)) if s > max_shots => {
            return Err(PluginError::bad_config(format!(
                "{task} config: `shots` must be at most {max_shots} (the few-shot tasks 2, 3, \
                 4), got {s}"
            )))
        }
        (true, Some(s)) => s,
    };
    if config.setup_code.is_some() && benchmark != Benchmark::Mbpp {
        return Err(PluginError::bad_config(format!(
            "{task} config: `setup_code` is for mbpp only (only full MBPP has `test_setup_code`)"
        )));
    }
    Ok(Settings {
        data: config.data_dir.map_or_else(DataDir::from_env, DataDir::new),
        limit: config.limit,
        shots,
        sandbox,
        ks: checked_ks(task, config.k)?,
        setup_code: config.setup_code.unwrap_or(true),
    })
}

/// The `k` list: each in 1..=MAX_K, no repeats; sorted ascending. Whether a cell has `k`
/// samples of every problem is the harness's check (it knows the cell's `n`).
fn checked_ks(task: &str, ks: Option<Vec<u64>>) -> Result<Vec<u64>> {
    let Some(mut ks) = ks else {
        return Ok(DEFAULT_KS.to_vec());
    };
    if ks.is_empty() {
        return Err(PluginError::bad_config(format!(
            "{task} config: `k` is empty; list the k of every pass@k to report, e.g. `k: [1, 10, \
             100]` (omit it for [1, 10])"
        )));
    }
    if let Some(bad) = ks.iter().find(|&&k| k == 0 || k > MAX_K) {
        return Err(PluginError::bad_config(format!(
            "{task} config: `k` values must be at least 1 and at most {MAX_K}, got {bad}"
        )));
    }
    ks.sort_unstable();
    if let Some(w) = ks.windows(2).find(|w| w[0] == w[1]) {
        return Err(PluginError::bad_config(format!(
            "{task} config: `k` lists {} twice",
            w[0]
        )));
    }
    Ok(ks)
}
