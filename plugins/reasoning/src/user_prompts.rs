//! Task `prompts`: a user's own prompts from a JSONL file, so a model can be tried on anything
//! without writing a plugin.
//!
//! # File
//!
//! One JSON object per line (blank lines are skipped; line numbers count them):
//! `{"id": "q1", "prompt": "…", "reference": "…"}`. `id` is a string or an integer (kept as
//! its decimal text) and unique in the file; `prompt` is a string; `reference` (optional, may
//! be `null`) is the expected completion. Any other key is refused, so a misspelt
//! `reference` never silently turns scoring off. Every error names `file:line`.
//!
//! # Config
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `path` | the JSONL file (a relative path is resolved against the directory `dlm-bench` runs in) | — |
//! | `stop` | stop strings: a completion is cut before the first one it contains | none |
//! | `limit` | use only the first `limit` prompts of the file | all |
//!
//! # Scoring
//!
//! No judgement beyond two figures, per completion (the completion as the harness cut it at
//! the end-of-text token and the stop strings):
//!
//! | metric | per completion | cell figure |
//! |---|---|---|
//! | `completion_chars` | length in characters (Unicode scalar values) | mean |
//! | `exact_match` | equals the row's `reference` after removing leading and trailing whitespace on both sides (rows without a reference: left out) | share of rows with a reference |
//!
//! `exact_match` is declared only when some row has a reference. A sample counts as right for
//! the harness's SER when it matches its reference; a row without a reference is never counted
//! wrong. The harness adds generated-token counts, NFE and timings as for every text task.
//! Sample `i` of a cell answers prompt `i mod P` (P prompts), prompt id = the row's `id`.

use dlm_sdk::{
    Better, Completion, MetricDecl, MetricKind, PluginError, Prompt, PromptsRequest, Result,
    SampleReferenceRequest, SampleScore, Task, TaskDescription, TaskProvenance, TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// The keys a row may have.
const ROW_KEYS: &str = "id, prompt, reference";

/// One row of a prompts file.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptRow {
    /// The prompt's id (unique in the file).
    pub id: String,
    /// The text the model continues.
    pub prompt: String,
    /// The expected completion, when the row gives one.
    pub reference: Option<String>,
}

/// Parse a prompts file's text; `name` is how errors name the file.
pub fn parse_rows(text: &str, name: &str) -> std::result::Result<Vec<PromptRow>, String> {
    let mut rows = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", i + 1);
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "{at}: not a JSON object ({e}); each line must be one object with keys {ROW_KEYS}"
            )
        })?;
        let Value::Object(object) = value else {
            return Err(format!(
                "{at}: not a JSON object; each line must be one object with keys {ROW_KEYS}"
            ));
        };
        if let Some(unknown) = object
            .keys()
            .find(|k| !["id", "prompt", "reference"].contains(&k.as_str()))
        {
            return Err(format!(
                "{at}: unknown key `{unknown}` (a row has keys {ROW_KEYS})"
            ));
        }
        let id = match object.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
            Some(other) => {
                return Err(format!(
                    "{at}: `id` must be a non-empty string or an integer, got {other}"
                ))
            }
            None => return Err(format!("{at}: missing `id` (a row has keys {ROW_KEYS})")),
        };
        let prompt = match object.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(format!("{at}: `prompt` must be a string, got {other}")),
            None => return Err(format!("{at}: missing `prompt` (row `{id}`)")),
        };
        let reference = match object.get("reference") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(format!(
                    "{at}: `reference` must be a string or null, got {other}"
                ))
            }
        };
        if let Some(first) = first_line.insert(id.clone(), i + 1) {
            return Err(format!(
                "{at}: duplicate id `{id}` (first at line {first}); ids must be unique"
            ));
        }
        rows.push(PromptRow {
            id,
            prompt,
            reference,
        });
    }
    if rows.is_empty() {
        return Err(format!(
            "{name}: no prompts (one JSON object per line, keys {ROW_KEYS})"
        ));
    }
    Ok(rows)
}

/// Whether a completion equals its reference, leading and trailing whitespace removed on both.
pub fn exact_match(completion: &str, reference: &str) -> bool {
    completion.trim() == reference.trim()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PromptsConfig {
    path: PathBuf,
    #[serde(default)]
    stop: Vec<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// The `prompts` task.
pub struct PromptsTask {
    path: PathBuf,
    sha256: String,
    rows: Vec<PromptRow>,
    index: HashMap<String, usize>,
    stop: Vec<String>,
}

impl PromptsTask {
    /// Open the task from its suite config.
    pub fn open(config: Value) -> Result<Self> {
        if config.is_null() {
            return Err(PluginError::bad_config(
                "prompts config: `path` is required (the JSONL file of {id, prompt, reference?})",
            ));
        }
        let config: PromptsConfig = serde_json::from_value(config).map_err(|e| {
            PluginError::bad_config(format!(
                "prompts config: {e} (keys: path, stop, limit; `path` is required)"
            ))
        })?;
        if config.stop.iter().any(String::is_empty) {
            return Err(PluginError::bad_config(
                "prompts config: a stop string must not be empty",
            ));
        }
        let bytes = std::fs::read(&config.path).map_err(|e| {
            PluginError::bad_config(format!(
                "prompts: cannot read `{}`: {e} (a relative `path` in a suite is taken from the suite file's folder)",
                config.path.display()
            ))
        })?;
        let name = config.path.display().to_string();
        let text = String::from_utf8(bytes.clone())
            .map_err(|e| PluginError::bad_data(format!("{name}: not UTF-8 text ({e})")))?;
        let mut rows = parse_rows(&text, &name).map_err(PluginError::bad_data)?;
        if let Some(limit) = config.limit {
            if limit == 0 {
                return Err(PluginError::bad_config(
                    "prompts config: limit must be at least 1",
                ));
            }
            rows.truncate(limit);
        }
        let index = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
        Ok(PromptsTask {
            sha256: format!("{:x}", Sha256::digest(&bytes)),
            path: config.path,
            rows,
            index,
            stop: config.stop,
        })
    }

    fn with_reference(&self) -> usize {
        self.rows.iter().filter(|r| r.reference.is_some()).count()
    }
}

fn no_sequences() -> PluginError {
    PluginError::unsupported(
        "a text task has no token-sequence sampler: the harness asks it for prompts (`task.prompts`)",
    )
}

impl Task for PromptsTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        let file = self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let referenced = self.with_reference();
        let mut d = TaskDescription::new(
            format!("prompts from {file} ({} prompts)", self.rows.len()),
            0,
            length,
        );
        d.details = json!({
            "task": "prompts",
            "file": self.path.display().to_string(),
            "sha256": self.sha256,
            "prompts": self.rows.len(),
            "with_reference": referenced,
            "stop": self.stop,
            "exact_match": "completion and reference equal after trimming surrounding whitespace",
            "length_unit": "characters",
        });
        // The run record: the file and its sum, the prompt as written, the stop strings.
        let mut provenance = TaskProvenance::new(
            "the file's `prompt` field as written",
            0,
            if referenced > 0 {
                "exact match with `reference`, surrounding whitespace removed"
            } else {
                "none (completion length only)"
            },
        )
        .with_dataset(self.path.display().to_string(), self.sha256.clone());
        if !self.stop.is_empty() {
            provenance = provenance.with_filter(format!("cut before the first of {:?}", self.stop));
        }
        d.provenance = Some(provenance);
        d.metrics = vec![MetricDecl::new(
            "completion_chars",
            "completion length (characters)",
            MetricKind::Mean,
            Better::Neither,
        )];
        if referenced > 0 {
            d.metrics.push(
                MetricDecl::new(
                    "exact_match",
                    "exact match (whitespace-trimmed)",
                    MetricKind::Rate,
                    Better::Higher,
                )
                .with_headline(),
            );
        }
        d.text = Some({
            let mut text = TextTaskInfo::new(self.stop.clone());
            text.prompts = Some(self.rows.len());
            text.prompt_ids = Some(self.rows.iter().map(|r| r.id.clone()).collect());
            text
        });
        Ok(d)
    }

    fn sample_reference(&mut self, _request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        Err(no_sequences())
    }

    fn score(&mut self, _sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        Err(no_sequences())
    }

    fn prompts(&mut self, request: &PromptsRequest) -> Result<Vec<Prompt>> {
        let total = self.rows.len() as u64;
        Ok((0..request.n as u64)
            .map(|k| {
                let row = &self.rows[((request.first_index + k) % total) as usize];
                Prompt {
                    id: row.id.clone(),
                    text: row.prompt.clone(),
                    reference: row.reference.clone(),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        completions
            .iter()
            .map(|c| {
                let row = self
                    .index
                    .get(&c.prompt_id)
                    .map(|&i| &self.rows[i])
                    .ok_or_else(|| {
                        PluginError::bad_data(format!(
                            "prompts: unknown prompt id `{}` (not in {})",
                            c.prompt_id,
                            self.path.display()
                        ))
                    })?;
                let mut extra = BTreeMap::new();
                extra.insert("completion_chars".into(), json!(c.text.chars().count()));
                let matched = row.reference.as_deref().map(|r| exact_match(&c.text, r));
                extra.insert("exact_match".into(), json!(matched));
                Ok(SampleScore::text(matched.unwrap_or(true), extra))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_with_numeric_ids_and_optional_references() {
        let text = "{\"id\": 7, \"prompt\": \"a\"}\n\n{\"id\": \"x\", \"prompt\": \"b\", \"reference\": \" B \"}\n{\"id\": \"y\", \"prompt\": \"c\", \"reference\": null}\n";
        let rows = parse_rows(text, "p.jsonl").unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["7", "x", "y"]);
        assert_eq!(rows[1].reference.as_deref(), Some(" B "));
        assert_eq!(rows[2].reference, None);
    }

    #[test]
    fn bad_rows_name_file_and_line() {
        let cases = [
            ("{\"prompt\": \"a\"}", "p.jsonl:1: missing `id`"),
            ("\n{\"id\": 1}", "p.jsonl:2: missing `prompt`"),
            (
                "{\"id\": 1, \"prompt\": \"a\"}\n{\"id\": \"1\", \"prompt\": \"b\"}",
                "p.jsonl:2: duplicate id `1` (first at line 1)",
            ),
            (
                "{\"id\": 1, \"prompt\": \"a\"}\nnot json",
                "p.jsonl:2: not a JSON object",
            ),
            ("[1, 2]", "p.jsonl:1: not a JSON object"),
            (
                "{\"id\": 1, \"prompt\": \"a\", \"refrence\": \"b\"}",
                "p.jsonl:1: unknown key `refrence`",
            ),
            (
                "{\"id\": 1.5, \"prompt\": \"a\"}",
                "p.jsonl:1: `id` must be",
            ),
            (
                "{\"id\": 1, \"prompt\": 3}",
                "p.jsonl:1: `prompt` must be a string",
            ),
            ("\n\n", "p.jsonl: no prompts"),
        ];
        for (text, expected) in cases {
            let e = parse_rows(text, "p.jsonl").unwrap_err();
            assert!(e.starts_with(expected), "{text:?}: {e}");
        }
    }

    #[test]
    fn exact_match_trims_surrounding_whitespace_only() {
        assert!(exact_match(" 42\n", "42"));
        assert!(exact_match("a b", " a b "));
        assert!(!exact_match("a  b", "a b"));
        assert!(!exact_match("42.", "42"));
        assert!(!exact_match("", "42"));
    }

    fn file(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("dlm-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    #[test]
    fn limit_keeps_the_first_rows_and_metrics_follow_the_references() {
        let path = file(
            "three.jsonl",
            "{\"id\": \"a\", \"prompt\": \"1\"}\n{\"id\": \"b\", \"prompt\": \"2\"}\n{\"id\": \"c\", \"prompt\": \"3\", \"reference\": \"x\"}\n",
        );
        let described = |config: Value| PromptsTask::open(config).unwrap().describe(64).unwrap();
        let d = described(json!({"path": path, "limit": 2, "stop": ["\n"]}));
        let text = d.text.unwrap();
        assert_eq!(text.prompts, Some(2));
        assert_eq!(text.prompt_ids, Some(vec!["a".into(), "b".into()]));
        assert_eq!(text.stop, ["\n"]);
        let names: Vec<String> = d.metrics.iter().map(|m| m.name.clone()).collect();
        assert_eq!(names, ["completion_chars"], "no row left has a reference");
        let d = described(json!({"path": path}));
        let names: Vec<String> = d.metrics.iter().map(|m| m.name.clone()).collect();
        assert_eq!(names, ["completion_chars", "exact_match"]);
        assert_eq!(d.details["with_reference"], json!(1));

        for (config, expected) in [
            (
                json!({"path": path, "limit": 0}),
                "limit must be at least 1",
            ),
            (
                json!({"path": path, "stop": [""]}),
                "stop string must not be empty",
            ),
            (json!({"file": path}), "unknown field `file`"),
            (Value::Null, "`path` is required"),
            (
                json!({"path": "no/such.jsonl"}),
                "taken from the suite file's folder",
            ),
        ] {
            let e = PromptsTask::open(config).err().unwrap().message;
            assert!(e.contains(expected), "{expected}: {e}");
        }
    }
}
