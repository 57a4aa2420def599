//! How a task's numbers are made: what a run record needs to stand next to a published table.
//! Since API 1.5.

use serde::{Deserialize, Serialize};

/// How a task's numbers are made, for a run record that can stand next to a published table
/// (see [`TaskDescription::provenance`](super::TaskDescription::provenance)). Build it with [`TaskProvenance::new`] and the `with_*`
/// methods; `#[non_exhaustive]` keeps later fields compatible. Since API 1.5.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskProvenance {
    /// The data files the task's documents (and few-shot examples) come from, with the sha256
    /// of the bytes read.
    #[serde(default)]
    pub datasets: Vec<DatasetFile>,
    /// The prompt template, named as its reference names it (e.g. `lm-eval gsm8k: Question:
    /// …\nAnswer:`).
    #[serde(default)]
    pub template: String,
    /// Few-shot examples in every prompt.
    #[serde(default)]
    pub shots: usize,
    /// The filters that turn a completion into the answer that is scored, in the order they
    /// apply (stop strings, extraction patterns, …).
    #[serde(default)]
    pub filters: Vec<String>,
    /// The scoring mode: how an answer is judged (e.g. `lm-eval`, `numeric`, `both`,
    /// `execution`).
    #[serde(default)]
    pub scoring: String,
    /// Deliberate differences from the reference tool these numbers are compared with, each
    /// naming the setting that removes it; empty when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Every prompt template the task writes its prompts in, where it takes several (each
    /// sample names its own: [`SampleScore::template`](super::SampleScore::template)); empty
    /// when the task has the one [`template`](Self::template). Since API 1.8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<PromptTemplate>,
}

/// One of the prompt templates of a [`TaskProvenance`]. Since API 1.8.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptTemplate {
    /// The name samples carry (e.g. `plain`).
    pub name: String,
    /// The template's text, with the task's placeholder (e.g. `{question}`) where the
    /// problem goes.
    pub text: String,
}

impl TaskProvenance {
    /// A task prompting with `template` and `shots` examples, scored under `scoring`, with no
    /// data files, filters or differences yet.
    pub fn new(template: impl Into<String>, shots: usize, scoring: impl Into<String>) -> Self {
        TaskProvenance {
            template: template.into(),
            shots,
            scoring: scoring.into(),
            ..TaskProvenance::default()
        }
    }

    /// The same with one more data file (`path` relative to the data directory, e.g.
    /// `mbpp/mbpp.jsonl`, and the lower-case hex sha256 of its bytes).
    pub fn with_dataset(mut self, path: impl Into<String>, sha256: impl Into<String>) -> Self {
        self.datasets.push(DatasetFile {
            path: path.into(),
            sha256: sha256.into(),
        });
        self
    }

    /// The same with one more answer filter, applied after the ones before it.
    pub fn with_filter(mut self, filter: impl Into<String>) -> Self {
        self.filters.push(filter.into());
        self
    }

    /// The same with one more deliberate difference from the reference tool.
    pub fn with_difference(mut self, difference: impl Into<String>) -> Self {
        self.differences.push(difference.into());
        self
    }

    /// The same with one more prompt template (see [`TaskProvenance::templates`]). Since API
    /// 1.8.
    pub fn with_prompt_template(
        mut self,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.templates.push(PromptTemplate {
            name: name.into(),
            text: text.into(),
        });
        self
    }
}

/// One data file of a [`TaskProvenance`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DatasetFile {
    /// The file, relative to the data directory (e.g. `gsm8k/test.jsonl`).
    pub path: String,
    /// The lower-case hex sha256 of its bytes.
    pub sha256: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskDescription;

    /// A description from a plugin before API 1.5 has no `provenance` and still reads; one
    /// with it round-trips, and an empty `differences` is left out of the JSON.
    #[test]
    fn provenance_is_optional_and_round_trips() {
        let old = r#"{"label": "x", "vocab_size": 0, "mask_id": 0, "length": 8,
                      "entropy_nats": null, "optimal_ter": null, "support_log10_density": null}"#;
        let d: TaskDescription = serde_json::from_str(old).unwrap();
        assert_eq!(d.provenance, None);
        assert!(!serde_json::to_string(&d).unwrap().contains("provenance"));

        let mut d = TaskDescription::new("x", 0, 8);
        d.provenance = Some(
            TaskProvenance::new("a template", 3, "numeric")
                .with_dataset("set/file.jsonl", "ab12")
                .with_filter("first")
                .with_filter("second"),
        );
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(
            json["provenance"],
            serde_json::json!({"datasets": [{"path": "set/file.jsonl", "sha256": "ab12"}],
                "template": "a template", "shots": 3, "filters": ["first", "second"],
                "scoring": "numeric"})
        );
        let back: TaskDescription = serde_json::from_value(json).unwrap();
        assert_eq!(back, d);
        let with_difference = TaskProvenance::new("t", 0, "s").with_difference("d");
        assert_eq!(
            serde_json::to_value(&with_difference).unwrap()["differences"],
            serde_json::json!(["d"])
        );
    }
}
