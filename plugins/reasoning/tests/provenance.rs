//! `gsm8k`'s description carries its provenance (API 1.5): the data files with the sha256 of
//! their bytes (computed here from the files themselves), the prompt template, the few-shot
//! count, the answer filters in order, the scoring mode, and the difference from lm-eval
//! exactly when `scoring: numeric` makes one.

use dlm_reasoning::answer::{FLEXIBLE_PATTERN, STRICT_COT_PATTERN, STRICT_PATTERN};
use dlm_reasoning::plugin::ReasoningPlugin;
use dlm_sdk::{Plugin, TaskProvenance};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn provenance(config: Value) -> TaskProvenance {
    let mut task =
        ReasoningPlugin::open_task("gsm8k", config).unwrap_or_else(|e| panic!("{}", e.message));
    task.describe(256)
        .unwrap()
        .provenance
        .expect("gsm8k declares its provenance")
}

fn sha256_of(file: &str) -> String {
    let bytes = std::fs::read(dlm_sdk::data::data_dir().join(file)).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn gsm8k_states_files_template_shots_filters_and_scoring() {
    let zero_shot = provenance(json!({"limit": 1}));
    let files: Vec<(&str, &str)> = zero_shot
        .datasets
        .iter()
        .map(|d| (d.path.as_str(), d.sha256.as_str()))
        .collect();
    let test_sum = sha256_of("gsm8k/test.jsonl");
    assert_eq!(files, [("gsm8k/test.jsonl", test_sum.as_str())]);
    assert_eq!(zero_shot.shots, 0);
    assert!(
        zero_shot.template.starts_with("lm-eval gsm8k:"),
        "{zero_shot:?}"
    );
    assert_eq!(zero_shot.scoring, "lm-eval");
    assert!(zero_shot.differences.is_empty(), "{zero_shot:?}");
    // Cut, strict, flexible, then lm-eval's exact match: the order they apply in.
    assert_eq!(zero_shot.filters.len(), 4, "{zero_shot:?}");
    assert!(zero_shot.filters[0].contains("Question:"));
    assert!(zero_shot.filters[1].contains(STRICT_PATTERN));
    assert!(zero_shot.filters[2].contains(FLEXIBLE_PATTERN));
    assert!(zero_shot.filters[3].contains("exact_match"));

    // Few-shot `gsm8k` prompts read the train split too.
    let few_shot = provenance(json!({"limit": 1, "shots": 2, "scoring": "numeric"}));
    let train_sum = sha256_of("gsm8k/train.jsonl");
    assert_eq!(few_shot.datasets[1].path, "gsm8k/train.jsonl");
    assert_eq!(few_shot.datasets[1].sha256, train_sum);
    assert_eq!(few_shot.shots, 2);
    assert_eq!(few_shot.scoring, "numeric");
    assert_eq!(few_shot.filters.len(), 3, "{few_shot:?}");
    assert!(
        few_shot.differences[0].contains("`scoring: lm-eval`"),
        "{few_shot:?}"
    );

    let cot = provenance(json!({"limit": 1, "format": "gsm8k-cot", "scoring": "both"}));
    assert_eq!(cot.shots, 8);
    assert_eq!(cot.datasets.len(), 1, "the CoT exemplars are fixed text");
    assert!(cot.filters[1].contains(STRICT_COT_PATTERN), "{cot:?}");
    assert_eq!(cot.scoring, "both");
    assert!(cot.differences.is_empty());
}
