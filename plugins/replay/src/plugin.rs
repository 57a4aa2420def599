//! The plugin glue: model `replay`, which answers a text task's prompts with generations read
//! from a file, so that completions made elsewhere (a LLaDA, Dream or Qwen run on a GPU
//! cluster, an lm-evaluation-harness or human-eval sample file) are scored by dlm-bench's own
//! tasks.
//!
//! # Config
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `path` | the replay file (relative paths: to the working directory) | — |
//! | `format` | `auto`, `native`, `lm-eval`, `human-eval` or `evalplus` | `auto` |
//! | `doc_id_prefix` | put before the file's doc ids to make the task's prompt ids, e.g. `test-` for lm-eval's GSM8K indices | none |
//!
//! # Which row answers a sample
//!
//! Sample `i` of a cell answers the task's prompt `i mod P` (P: the task's prompt count) and is
//! that prompt's sample number `i div P`. Its row is the one with the prompt's id, that sample
//! number and the cell's step count — the suite's `steps:` for the sampler `replay` select the
//! file's step groups, one cell each; a file without step counts is read at any step count. A
//! missing row is an error naming the document, sample and step count, never a silent gap; a
//! row whose id the task does not have (its `prompt_ids`) is refused when the model opens,
//! naming its line.
//!
//! Replayed generations carry no token counts, so tokens per forward and tokens/s are not
//! measured (0); NFE and seconds are the file's where it gives them.

use crate::{read, Format, ReplaySet};
use dlm_sdk::{
    ComponentInfo, GenerateReply, GenerateRequest, Model, ModelOpenConfig, Plugin, PluginError,
    Result, SampleStats, SamplerInfo,
};
use serde::Deserialize;
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

/// The plugin: model `replay`.
pub struct ReplayPlugin;

/// The sampler the model answers: it replays, it does not sample.
pub const SAMPLER: &str = "replay";

impl Plugin for ReplayPlugin {
    const NAME: &'static str = "dlm-replay";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "generations made elsewhere (native JSONL, lm-eval --log_samples, human-eval, evalplus), replayed for scoring";
    const HAS_MODELS: bool = true;

    fn models() -> Vec<ComponentInfo> {
        vec![ComponentInfo::new(
            "replay",
            "replays a generation file (config: path, format, doc_id_prefix)",
        )
        .with_capability("text")
        .with_sampler(SamplerInfo {
            name: SAMPLER.into(),
            one_step_per_token: false,
            params: Vec::new(),
            steps_optional: true,
        })]
    }

    fn open_model(name: &str, open: ModelOpenConfig) -> Result<Box<dyn Model>> {
        if name != "replay" {
            return Err(PluginError::bad_config(format!(
                "plugin `dlm-replay` provides no model `{name}` (it has `replay`)"
            )));
        }
        Ok(Box::new(ReplayModel::open(open)?))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayConfig {
    path: PathBuf,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    doc_id_prefix: Option<String>,
}

struct ReplayModel {
    set: ReplaySet,
    prefix: String,
    /// The task's prompt count (samples cycle through the prompts).
    prompts: Option<usize>,
}

impl ReplayModel {
    fn open(open: ModelOpenConfig) -> Result<Self> {
        let config: ReplayConfig = serde_json::from_value(open.config).map_err(|e| {
            PluginError::bad_config(format!(
                "replay config: {e} (keys: path (required), format, doc_id_prefix)"
            ))
        })?;
        let format: Format = config.format.as_deref().unwrap_or("auto").parse().map_err(
            |e: crate::ReplayError| PluginError::bad_config(format!("replay config: {e}")),
        )?;
        let text = open.task.description.text.as_ref().ok_or_else(|| {
            PluginError::unsupported(format!(
                "replay answers text tasks only; task `{}` of `{}` is not one",
                open.task.task, open.task.plugin
            ))
        })?;
        let set = read(&config.path, format).map_err(|e| PluginError::bad_data(e.to_string()))?;
        let prefix = config.doc_id_prefix.unwrap_or_default();
        if let Some(ids) = &text.prompt_ids {
            check_known(&set, &prefix, ids)?;
        }
        Ok(ReplayModel {
            set,
            prefix,
            prompts: text.prompts,
        })
    }

    /// The file's step group for a cell at `steps`.
    fn group(&self, steps: usize) -> Result<Option<u32>> {
        let counts = self.set.step_counts();
        let wanted = u32::try_from(steps).ok();
        if counts.contains(&wanted) {
            return Ok(wanted);
        }
        if counts.contains(&None) {
            return Ok(None);
        }
        let shown: Vec<String> = counts
            .iter()
            .map(|c| c.map_or("none".into(), |c| c.to_string()))
            .collect();
        Err(PluginError::bad_data(format!(
            "replay file {} has no generations at {steps} steps; it has step counts {}",
            self.set.path().display(),
            shown.join(", ")
        )))
    }
}

/// Every row must answer a prompt the task has (as `doc_id_prefix` + doc_id): a row for any
/// other id would otherwise be left out without a word.
fn check_known(set: &ReplaySet, prefix: &str, ids: &[String]) -> Result<()> {
    let known: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let unknown: Vec<_> = set
        .rows()
        .iter()
        .filter(|r| !known.contains(format!("{prefix}{}", r.doc_id).as_str()))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let docs: BTreeSet<&str> = unknown.iter().map(|r| r.doc_id.as_str()).collect();
    let first: Vec<String> = unknown
        .iter()
        .take(5)
        .map(|r| format!("doc_id `{}` on line {}", r.doc_id, r.line))
        .collect();
    let range = match (ids.first(), ids.last()) {
        (Some(a), Some(b)) => format!("`{a}` … `{b}`"),
        _ => "none".into(),
    };
    Err(PluginError::bad_data(format!(
        "replay file {}: {} row(s) name {} doc_id(s) the task does not have: {}{}. The task's {} \
         prompt ids run {range} (doc_id_prefix `{prefix}` is put before the file's ids); check \
         doc_id_prefix and the task's split and limit, or remove those rows",
        set.path().display(),
        unknown.len(),
        docs.len(),
        first.join(", "),
        if unknown.len() > first.len() {
            ", …"
        } else {
            ""
        },
        ids.len(),
    )))
}

impl Model for ReplayModel {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        if request.sampler.name != SAMPLER {
            return Err(PluginError::unsupported(format!(
                "the replay model answers only the sampler `{SAMPLER}`, not `{}`",
                request.sampler.name
            )));
        }
        let prompts = request.prompt_texts.as_ref().ok_or_else(|| {
            PluginError::bad_config("replay needs the prompts' ids (a text task of API 1.2)")
        })?;
        let steps = self.group(request.sampler.steps)?;
        let mut texts = Vec::with_capacity(prompts.len());
        let mut samples = Vec::with_capacity(prompts.len());
        let mut seconds = 0.0;
        for (k, prompt) in prompts.iter().enumerate() {
            let index = request.first_index + k as u64;
            let sample = self.prompts.map_or(0, |p| index / p.max(1) as u64);
            let doc_id = prompt
                .id
                .strip_prefix(self.prefix.as_str())
                .unwrap_or(&prompt.id);
            let row = u32::try_from(sample)
                .ok()
                .and_then(|s| self.set.get(steps, doc_id, s))
                .ok_or_else(|| {
                    PluginError::bad_data(format!(
                        "replay file {} has no generation for doc_id `{doc_id}`, sample {sample}{} (the task's prompt `{}`); add it, or lower the suite's `samples`",
                        self.set.path().display(),
                        steps.map_or(String::new(), |s| format!(" at {s} steps")),
                        prompt.id
                    ))
                })?;
            texts.push(row.generation.clone());
            samples.push(SampleStats {
                nfe: row.nfe.unwrap_or(0),
                generated_tokens: 0,
            });
            seconds += row.seconds.unwrap_or(0.0);
        }
        Ok((
            Vec::new(),
            GenerateReply {
                lengths: Vec::new(),
                batch_nfe: samples.iter().map(|s| s.nfe).max().unwrap_or(0),
                samples,
                wall_seconds: seconds,
                device: "replay".into(),
                texts: Some(texts),
            },
        ))
    }
}

/// The exported descriptor static and root module (generated, so not documented here).
#[allow(missing_docs)]
mod export {
    dlm_sdk::export_plugin!(super::ReplayPlugin);
}
