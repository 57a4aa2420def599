//! Tests of the plugin glue: opening, prompts, scores, configs (with the real sandbox and
//! data where they are here).
use super::*;
use crate::data::{HUMANEVAL_FILE, MBPP_FILE, MBPP_SANITIZED_FILE};
use crate::sandbox::SandboxConfig;

#[path = "../../../../tests/common/skip.rs"]
mod skip;

/// Whether the real sandbox runs here; otherwise a visible skip, or a failure where the
/// sandbox is required (`CI=true`, `DLM_BENCH_REQUIRE_SANDBOX`).
fn sandbox_here() -> bool {
    match Sandbox::new(true, SandboxConfig::default()) {
        Ok(_) => true,
        Err(e) => {
            skip::absent(&skip::SANDBOX, e);
            false
        }
    }
}

/// Whether the benchmark files are here; otherwise a visible skip, or a failure under
/// `CI=true` (the data are committed under `data/`).
fn data_here() -> bool {
    let d = DataDir::from_env();
    for f in [MBPP_FILE, MBPP_SANITIZED_FILE, HUMANEVAL_FILE] {
        if !d.has(f) {
            skip::absent(&skip::DATA, format!("{} is absent", d.path(f).display()));
            return false;
        }
    }
    true
}

fn open(benchmark: Benchmark, config: Value) -> CodeTask {
    CodeTask::open(benchmark, config).unwrap_or_else(|e| panic!("{}", e.message))
}

fn open_err(name: &str, config: Value) -> String {
    match CodePlugin::open_task(name, config) {
        Ok(_) => panic!("{name} opened"),
        Err(e) => e.message,
    }
}

fn completion(id: &str, text: &str) -> Completion {
    Completion {
        prompt_id: id.into(),
        text: text.into(),
    }
}

/// The harness cuts completions before the first stop string; so do these tests.
fn cut(text: &str, stop: &[String]) -> String {
    let stops: Vec<&str> = stop.iter().map(String::as_str).collect();
    extract::truncate_at_stops(text, &stops).to_string()
}

#[test]
fn reference_completions_pass() {
    if !(data_here() && sandbox_here()) {
        return;
    }
    for benchmark in Benchmark::ALL {
        let mut task = open(
            benchmark,
            json!({"allow_code_execution": true, "limit": 20}),
        );
        let stop = task.describe(0).unwrap().text.unwrap().stop;
        let prompts = task
            .prompts(&PromptsRequest {
                first_index: 0,
                n: 20,
                seed: 0,
            })
            .unwrap();
        let completions: Vec<Completion> = prompts
            .iter()
            .map(|p| completion(&p.id, &cut(p.reference.as_deref().unwrap(), &stop)))
            .collect();
        let scores = task.score_text(&completions).unwrap();
        assert_eq!(scores.len(), 20);
        for (p, s) in prompts.iter().zip(&scores) {
            assert!(s.in_support, "{} {}: {s:?}", benchmark.name(), p.id);
            assert_eq!(s.extra["passed"], json!(true));
            assert_eq!(s.extra["pass_at_10"], json!(true));
            assert!(!s.extra.contains_key("cause"));
        }
    }
}

#[test]
fn wrong_completions_fail_with_their_cause() {
    if !(data_here() && sandbox_here()) {
        return;
    }
    let mut task = open(
        Benchmark::HumanEval,
        json!({"allow_code_execution": true, "limit": 3, "timeout_seconds": 1, "jobs": 2}),
    );
    let scores = task
        .score_text(&[
            completion("HumanEval/0", "    return None\n"),
            completion("HumanEval/1", "    return undefined_name\n"),
            completion("HumanEval/2", "    return (\n"),
            completion("HumanEval/0", "    while True:\n        pass\n"),
        ])
        .unwrap();
    let causes: Vec<(&Value, Option<&Value>)> = scores
        .iter()
        .map(|s| (&s.extra["cause"], s.extra.get("failing_test")))
        .collect();
    assert_eq!(
        causes,
        [
            (&json!("AssertionError"), Some(&json!(0))),
            (&json!("NameError"), Some(&json!(0))),
            (&json!("syntax error"), None),
            (&json!("timeout"), None),
        ]
    );
    assert!(scores.iter().all(|s| !s.in_support));
    assert_eq!(scores[0].extra["passed"], json!(false));
    assert_eq!(scores[0].extra["code"], json!("    return None\n"));
    assert_eq!(scores[2].extra["stage"], json!("sample"));
    assert!(
        scores[1].extra["message"]
            .as_str()
            .unwrap()
            .contains("undefined_name"),
        "{:?}",
        scores[1].extra
    );

    let mut task = open(
        Benchmark::Mbpp,
        json!({"allow_code_execution": true, "limit": 2}),
    );
    let scores = task
        .score_text(&[
            // Fenced, then cut at [DONE]: the code is the block's body.
            completion(
                "11",
                "```python\ndef remove_Occ(s, ch):\n    return s\n```\n[DONE]",
            ),
            completion("12", "def sort_matrix(m):\n    raise ValueError('no')\n"),
        ])
        .unwrap();
    assert_eq!(scores[0].extra["cause"], json!("AssertionError"));
    assert_eq!(scores[0].extra["failing_test"], json!(0));
    assert_eq!(
        scores[0].extra["code"],
        json!("def remove_Occ(s, ch):\n    return s")
    );
    assert_eq!(scores[1].extra["cause"], json!("ValueError"));
    assert_eq!(scores[1].extra["message"], json!("no"));

    let e = task
        .score_text(&[completion("10", "")])
        .unwrap_err()
        .message;
    assert!(e.contains("unknown prompt id `10`"), "{e}");
}

#[test]
fn results_do_not_depend_on_jobs() {
    if !(data_here() && sandbox_here()) {
        return;
    }
    let scores = |jobs: usize| {
        let mut task = open(
            Benchmark::HumanEval,
            json!({"allow_code_execution": true, "limit": 20, "jobs": jobs}),
        );
        let prompts = task
            .prompts(&PromptsRequest {
                first_index: 0,
                n: 24,
                seed: 0,
            })
            .unwrap();
        let completions: Vec<Completion> = prompts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let text = match i % 3 {
                    0 => p.reference.clone().unwrap(),
                    1 => "    return None\n".to_string(),
                    _ => "    return 1 / 0\n".to_string(),
                };
                completion(&p.id, &text)
            })
            .collect();
        task.score_text(&completions).unwrap()
    };
    let one = scores(1);
    assert_eq!(one, scores(4));
    let passed = one.iter().filter(|s| s.in_support).count();
    assert_eq!(passed, 8, "every reference, no wrong completion");
}

#[test]
fn prompts_ids_and_references() {
    if !data_here() {
        return;
    }
    let dir = DataDir::from_env();
    let mbpp = load_problems(Benchmark::Mbpp, &dir, 3, None, true).unwrap();
    assert_eq!(mbpp.len(), 500);
    assert_eq!((mbpp[0].id.as_str(), mbpp[499].id.as_str()), ("11", "510"));
    assert!(mbpp[0]
        .prompt
        .starts_with("You are an expert Python programmer, and here is your task: Write a function to find the similar elements"));
    assert_eq!(mbpp[0].prompt.matches("[BEGIN]").count(), 4);
    assert_eq!(mbpp[0].prompt.matches("[DONE]").count(), 3);
    assert!(mbpp[0].prompt.ends_with("[BEGIN]\n"));
    assert!(mbpp[0].reference.ends_with("\n[DONE]"));
    let zero = load_problems(Benchmark::Mbpp, &dir, 0, Some(5), true).unwrap();
    assert_eq!(zero.len(), 5);
    assert_eq!(zero[0].prompt.matches("[BEGIN]").count(), 1);

    let sanitized = load_problems(Benchmark::MbppSanitized, &dir, 3, None, true).unwrap();
    assert_eq!(sanitized.len(), 257);
    assert_eq!(sanitized[0].id, "11");
    assert_eq!(sanitized[0].prompt.matches("[BEGIN]").count(), 4);

    let he = load_problems(Benchmark::HumanEval, &dir, 0, Some(8), true).unwrap();
    assert_eq!(he.len(), 8);
    assert_eq!(he[3].id, "HumanEval/3");
    assert!(he[0].prompt.starts_with("from typing import List"));
    assert!(he[0].reference.starts_with("    for idx, elem"));
}

#[test]
fn code_execution_needs_the_opt_in() {
    for name in ["mbpp", "mbpp-sanitized", "humaneval"] {
        for config in [
            Value::Null,
            json!({}),
            json!({"allow_code_execution": false}),
        ] {
            let e = open_err(name, config);
            assert!(
                e.starts_with(&format!("{name}: code execution is disabled")),
                "{e}"
            );
            assert!(e.contains("`allow_code_execution: true`"), "{e}");
        }
    }
}

#[test]
fn bad_configs_name_the_key() {
    let on = |extra: Value| {
        let mut c = json!({"allow_code_execution": true});
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        c
    };
    let e = open_err("mbpp", on(json!({"limt": 3})));
    assert!(e.contains("unknown field `limt`"), "{e}");
    assert!(e.contains("keys: allow_code_execution"), "{e}");
    let e = open_err("humaneval", json!({"allow_code_execution": "yes"}));
    assert!(e.contains("`allow_code_execution`: invalid type"), "{e}");
    let e = open_err("mbpp", on(json!({"jobs": -1})));
    assert!(e.contains("`jobs`"), "{e}");
    let e = open_err("mbpp", on(json!({"jobs": 0})));
    assert!(e.contains("`jobs` must be at least 1"), "{e}");
    let e = open_err("mbpp", on(json!({"limit": 0})));
    assert!(e.contains("`limit` must be at least 1"), "{e}");
    let e = open_err("humaneval", on(json!({"timeout_seconds": 0})));
    assert!(e.contains("`timeout_seconds` must be more than 0"), "{e}");
    let e = open_err("humaneval", on(json!({"shots": 3})));
    assert!(e.contains("`shots` is for mbpp"), "{e}");
    let e = open_err("mbpp-sanitized", on(json!({"shots": 4})));
    assert!(e.contains("`shots` must be at most 3"), "{e}");
    let e = open_err("mbpp_full", json!({}));
    assert!(e.contains("no task `mbpp_full`"), "{e}");
    let e = open_err("humaneval", on(json!({"memory_mb": 100})));
    assert!(
        e.contains("`memory_mb`") && e.contains("at least 512"),
        "{e}"
    );
    let e = open_err("humaneval", on(json!({"memory_mb": 1u64 << 30})));
    assert!(e.contains("at most 1048576"), "{e}");
    let e = open_err("mbpp", on(json!({"memory_mb": "1G"})));
    assert!(e.contains("`memory_mb`: invalid type"), "{e}");
}

#[test]
fn memory_mb_sets_the_sandbox_cap() {
    let parse = |config: Value| {
        settings(
            Benchmark::HumanEval,
            parse_config(Benchmark::HumanEval, config).unwrap(),
        )
        .unwrap()
        .sandbox
    };
    let default = parse(json!({"allow_code_execution": true}));
    assert_eq!(default.memory_bytes, SandboxConfig::default().memory_bytes);
    assert_eq!(
        default.memory_bytes,
        1 << 30,
        "the documented default, 1024 MiB"
    );
    let set = parse(json!({"allow_code_execution": true, "memory_mb": 768}));
    assert_eq!(set.memory_bytes, 768 << 20);
}

#[test]
fn scores_carry_cause_stage_and_code() {
    let s = sample_score("x".into(), &Outcome::Passed, &config::DEFAULT_KS);
    assert!(s.in_support);
    assert_eq!(
        s.extra.keys().collect::<Vec<_>>(),
        ["code", "pass_at_1", "pass_at_10", "passed"]
    );
    let s = sample_score(
        "y".into(),
        &Outcome::Failed {
            stage: Stage::Unknown,
            cause: Cause::OutputLimit,
        },
        &config::DEFAULT_KS,
    );
    assert!(!s.in_support);
    assert_eq!(s.extra["cause"], json!("output limit"));
    assert_eq!(s.extra["stage"], json!("run"));
    assert!(!s.extra.contains_key("failing_test"));
    assert!(!s.extra.contains_key("message"));
}

#[test]
fn the_plugin_lists_three_text_tasks() {
    let names: Vec<String> = CodePlugin::tasks().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mbpp", "mbpp-sanitized", "humaneval"]);
    for b in Benchmark::ALL {
        assert_eq!(Benchmark::from_name(b.name()), Some(b));
    }
    assert_eq!(Benchmark::Mbpp.stop(), ["[DONE]"]);
    assert_eq!(Benchmark::HumanEval.stop().len(), 5);
}

/// `setup_code: false` runs lm-eval's `mbpp` program (completion + `test_list`): the same as
/// ours for every test-split problem but 367, the only one with setup code, which then fails
/// with a NameError even for its reference solution, as under lm-eval.
#[test]
fn without_setup_code_task_367_fails_as_under_lm_eval() {
    if !data_here() {
        return;
    }
    let dir = DataDir::from_env();
    let with = load_problems(Benchmark::Mbpp, &dir, 3, None, true).unwrap();
    let without = load_problems(Benchmark::Mbpp, &dir, 3, None, false).unwrap();
    let differing: Vec<&str> = with
        .iter()
        .zip(&without)
        .filter(|(a, b)| a.program(&a.reference, false) != b.program(&b.reference, false))
        .map(|(a, _)| a.id.as_str())
        .collect();
    assert_eq!(differing, ["367"]);
    if !sandbox_here() {
        return;
    }
    let score_367 = |setup_code: bool| {
        let mut task = open(
            Benchmark::Mbpp,
            json!({"allow_code_execution": true, "setup_code": setup_code}),
        );
        let stop = task.describe(0).unwrap().text.unwrap().stop;
        let reference = task.problem("367").unwrap().reference.clone();
        task.score_text(&[completion("367", &cut(&reference, &stop))])
            .unwrap()
            .remove(0)
    };
    let kept = score_367(true);
    assert!(kept.in_support, "{kept:?}");
    let dropped = score_367(false);
    assert!(!dropped.in_support, "{dropped:?}");
    assert_eq!(dropped.extra["cause"], json!("NameError"));
    assert_eq!(dropped.extra["failing_test"], json!(0));
    assert!(
        dropped.extra["message"].as_str().unwrap().contains("root"),
        "{dropped:?}"
    );
}

#[test]
fn k_declares_one_pass_at_k_metric_each() {
    let parse = |benchmark: Benchmark, config: Value| {
        settings(benchmark, parse_config(benchmark, config).unwrap())
    };
    let ks = parse(
        Benchmark::HumanEval,
        json!({"allow_code_execution": true, "k": [5, 1, 2]}),
    )
    .unwrap()
    .ks;
    assert_eq!(ks, [1, 2, 5]);
    let declared: Vec<(String, String, MetricKind)> = metrics(&ks)
        .into_iter()
        .map(|m| (m.name, m.label, m.kind))
        .collect();
    assert_eq!(
        declared,
        [
            ("passed".into(), "pass (all tests)".into(), MetricKind::Rate),
            (
                "pass_at_1".into(),
                "pass@1".into(),
                MetricKind::PassAtK { k: 1 }
            ),
            (
                "pass_at_2".into(),
                "pass@2".into(),
                MetricKind::PassAtK { k: 2 }
            ),
            (
                "pass_at_5".into(),
                "pass@5".into(),
                MetricKind::PassAtK { k: 5 }
            ),
        ]
    );
    let s = sample_score("x".into(), &Outcome::Passed, &ks);
    assert_eq!(
        s.extra.keys().collect::<Vec<_>>(),
        ["code", "pass_at_1", "pass_at_2", "pass_at_5", "passed"]
    );
    let on = json!({"allow_code_execution": true});
    assert_eq!(parse(Benchmark::Mbpp, on).unwrap().ks, config::DEFAULT_KS);
    for (config, says) in [
        (json!({"k": []}), "`k` is empty"),
        (
            json!({"k": [0, 1]}),
            "at least 1 and at most 1000000, got 0",
        ),
        (json!({"k": [10, 1, 10]}), "`k` lists 10 twice"),
    ] {
        let mut c = config.clone();
        c["allow_code_execution"] = json!(true);
        let e = open_err("humaneval", c);
        assert!(
            e.starts_with("humaneval config: ") && e.contains(says),
            "{e}"
        );
    }
    for name in ["humaneval", "mbpp-sanitized"] {
        let e = open_err(
            name,
            json!({"allow_code_execution": true, "setup_code": false}),
        );
        assert!(e.contains("`setup_code` is for mbpp only"), "{e}");
    }
}

/// The description's provenance: the data file with the sum of its bytes, the template, the
/// few-shot count, the filters, the scoring, and the setup-code difference from lm-eval
/// exactly when it applies.
#[test]
fn the_description_carries_the_provenance() {
    if !(data_here() && sandbox_here()) {
        return;
    }
    let describe = |benchmark: Benchmark, extra: Value| {
        let mut config = json!({"allow_code_execution": true, "limit": 2});
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        open(benchmark, config)
            .describe(0)
            .unwrap()
            .provenance
            .unwrap()
    };
    for benchmark in Benchmark::ALL {
        let p = describe(benchmark, json!({}));
        let file = benchmark.data_file();
        assert_eq!(p.datasets.len(), 1);
        assert_eq!(p.datasets[0].path, file);
        assert_eq!(
            Some(p.datasets[0].sha256.as_str()),
            data::pinned_sha256(file)
        );
        assert_eq!(p.shots, if benchmark.few_shot() { 3 } else { 0 });
        assert!(p.scoring.starts_with("execution"), "{p:?}");
        assert!(p.filters[0].contains(&benchmark.stop()[0]), "{p:?}");
    }
    let kept = describe(Benchmark::Mbpp, json!({"shots": 1}));
    assert_eq!(kept.shots, 1);
    assert!(kept.scoring.contains("test_setup_code"), "{kept:?}");
    assert!(
        kept.differences[0].contains("`setup_code: false`"),
        "{kept:?}"
    );
    let dropped = describe(Benchmark::Mbpp, json!({"setup_code": false}));
    assert!(!dropped.scoring.contains("test_setup_code"), "{dropped:?}");
    assert!(dropped.differences.is_empty(), "{dropped:?}");
    assert!(describe(Benchmark::HumanEval, json!({}))
        .differences
        .is_empty());
}
