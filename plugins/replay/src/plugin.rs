//! The plugin glue: model `replay`, which answers a text task's prompts with generations read
//! from a file, so that completions made elsewhere (a LLaDA, Dream or Qwen run on a GPU
//! cluster, an lm-evaluation-harness or human-eval sample file) are scored by dlm-bench's own
//! tasks.
//!
//! # Config
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `path` | the replay file (relative paths: to the suite file's folder) | — |
//! | `format` | `auto`, `native`, `lm-eval`, `human-eval` or `evalplus` | `auto` |
//! | `doc_id_offset` | added to the file's integer doc ids, e.g. `11` for lm-eval's MBPP (its 0-based `doc_id` 0 is MBPP task 11) | 0 |
//! | `doc_id_prefix` | put before the file's doc ids (after the offset) to make the task's prompt ids, e.g. `test-` for lm-eval's GSM8K indices | none |
//!
//! # Whole programs
//!
//! An evalplus file's `solution` is the whole program, not a continuation of the prompt: the
//! model answers with [`GenerateReply::whole_programs`] set, so the harness neither cuts it at
//! the task's stop strings nor has the task put the prompt before it. A task that cannot score
//! whole programs (not [`dlm_sdk::TextTaskInfo::whole_programs`]) is refused when the model
//! opens.
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
use std::collections::{BTreeSet, HashMap, HashSet};
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
            "replays a generation file (config: path, format, doc_id_offset, doc_id_prefix)",
        )
        .with_capability("text")
        .with_config_of::<ReplayConfig>(&["path"])
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
    #[serde(default)]
    doc_id_offset: Option<i64>,
}

struct ReplayModel {
    set: ReplaySet,
    /// The task's prompt id of each of the file's doc ids (offset and prefix applied), and
    /// back.
    to_task: HashMap<String, String>,
    to_file: HashMap<String, String>,
    prefix: String,
    offset: i64,
    /// The task's prompt count (samples cycle through the prompts).
    prompts: Option<usize>,
}

impl ReplayModel {
    fn open(open: ModelOpenConfig) -> Result<Self> {
        let config: ReplayConfig = serde_json::from_value(open.config.clone()).map_err(|e| {
            PluginError::bad_config(format!(
                "replay config: {e} (keys: path (required), format, doc_id_offset, doc_id_prefix)"
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
        // `path` is a declared path key: the harness has joined a relative one to the suite
        // file's folder already.
        let set = read(&config.path, format).map_err(|e| PluginError::bad_data(e.to_string()))?;
        if set.format() == Format::EvalPlus && !text.whole_programs {
            return Err(PluginError::unsupported(format!(
                "replay file {} is an evalplus file: its `solution`s are whole programs, which \
                 task `{}` of `{}` cannot score (it scores completions that continue its \
                 prompts); replay completions instead (`completion`: format human-eval)",
                set.path().display(),
                open.task.task,
                open.task.plugin
            )));
        }
        let prefix = config.doc_id_prefix.unwrap_or_default();
        let offset = config.doc_id_offset.unwrap_or(0);
        let mut to_task = HashMap::new();
        for row in set.rows() {
            if !to_task.contains_key(&row.doc_id) {
                let id = task_id(&set, row, offset, &prefix)?;
                to_task.insert(row.doc_id.clone(), id);
            }
        }
        let to_file = to_task
            .iter()
            .map(|(file, task)| (task.clone(), file.clone()))
            .collect();
        if let Some(ids) = &text.prompt_ids {
            check_known(&set, &to_task, &prefix, offset, ids)?;
        }
        Ok(ReplayModel {
            set,
            to_task,
            to_file,
            prefix,
            offset,
            prompts: text.prompts,
        })
    }

    /// The file's doc_id for a task's prompt id: the one its rows map to, or (for a prompt the
    /// file lacks, to name it in the error) the prompt id with the prefix and offset undone.
    fn file_id(&self, prompt_id: &str) -> String {
        if let Some(id) = self.to_file.get(prompt_id) {
            return id.clone();
        }
        let bare = prompt_id.strip_prefix(&self.prefix).unwrap_or(prompt_id);
        match bare.parse::<i64>() {
            Ok(n) if self.offset != 0 => n
                .checked_sub(self.offset)
                .map_or_else(|| bare.to_owned(), |n| n.to_string()),
            _ => bare.to_owned(),
        }
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

/// The task's prompt id of a row: `doc_id_prefix` + (doc_id + `doc_id_offset`).
fn task_id(set: &ReplaySet, row: &crate::ReplayRow, offset: i64, prefix: &str) -> Result<String> {
    if offset == 0 {
        return Ok(format!("{prefix}{}", row.doc_id));
    }
    let shifted = row
        .doc_id
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_add(offset))
        .filter(|n| *n >= 0)
        .ok_or_else(|| {
            PluginError::bad_data(format!(
                "{}:{}: doc_id `{}` is not an integer that `doc_id_offset: {offset}` can shift \
                 to a non-negative id; remove `doc_id_offset`, or use it only with files whose \
                 doc ids are numbers (lm-eval's)",
                set.path().display(),
                row.line,
                row.doc_id
            ))
        })?;
    Ok(format!("{prefix}{shifted}"))
}

/// Every row must answer a prompt the task has (as `doc_id_prefix` + doc_id): a row for any
/// other id would otherwise be left out without a word.
fn check_known(
    set: &ReplaySet,
    to_task: &HashMap<String, String>,
    prefix: &str,
    offset: i64,
    ids: &[String],
) -> Result<()> {
    let known: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let unknown: Vec<_> = set
        .rows()
        .iter()
        .filter(|r| !known.contains(to_task[&r.doc_id].as_str()))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let docs: BTreeSet<&str> = unknown.iter().map(|r| r.doc_id.as_str()).collect();
    let first: Vec<String> = unknown
        .iter()
        .take(5)
        .map(|r| {
            let id = &to_task[&r.doc_id];
            if *id == r.doc_id {
                format!("doc_id `{}` on line {}", r.doc_id, r.line)
            } else {
                format!(
                    "doc_id `{}` on line {} (prompt id `{id}`)",
                    r.doc_id, r.line
                )
            }
        })
        .collect();
    let range = match (ids.first(), ids.last()) {
        (Some(a), Some(b)) => format!("`{a}` … `{b}`"),
        _ => "none".into(),
    };
    Err(PluginError::bad_data(format!(
        "replay file {}: {} row(s) name {} doc_id(s) the task does not have: {}{}. The task's {} \
         prompt ids run {range} (doc_id_offset {offset} is added to the file's ids, then \
         doc_id_prefix `{prefix}` put before them); check doc_id_offset, doc_id_prefix, the \
         task's split and limit, and the suite's doc_ids, or remove those rows",
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
            let doc_id = self.file_id(&prompt.id);
            let doc_id = doc_id.as_str();
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
                ..Default::default()
            });
            seconds += row.seconds.unwrap_or(0.0);
        }
        Ok((
            Vec::new(),
            GenerateReply {
                lengths: Vec::new(),
                batch_nfe: samples.iter().map(|s| s.nfe).max().unwrap_or(0),
                batch_positions: None,
                samples,
                wall_seconds: seconds,
                device: "replay".into(),
                texts: Some(texts),
                whole_programs: self.set.format() == Format::EvalPlus,
                settings: None,
            },
        ))
    }

    /// The task's prompt ids the file has rows for, for `docs_from_replay: true`.
    fn prompt_ids(&mut self) -> Result<Option<Vec<String>>> {
        let mut ids: Vec<String> = self.to_task.values().cloned().collect();
        ids.sort();
        Ok(Some(ids))
    }
}

/// The exported descriptor static and root module (generated, so not documented here).
#[allow(missing_docs)]
mod export {
    dlm_sdk::export_plugin!(super::ReplayPlugin);
}
