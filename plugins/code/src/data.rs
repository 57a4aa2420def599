//! MBPP, sanitized MBPP and HumanEval: loading (sha256-checked), splits and prompts.
//!
//! Files, relative to the data directory (see the repository's `data/README.md`):
//! `mbpp/mbpp.jsonl` (974 tasks), `mbpp/sanitized-mbpp.json` (427),
//! `humaneval/HumanEval.jsonl.gz` (164). The data directory is `$DLM_BENCH_DATA`, or by
//! default the repository's `data/` (`<workspace root>/data`).
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// `mbpp/mbpp.jsonl`, relative to the data directory.
pub const MBPP_FILE: &str = "mbpp/mbpp.jsonl";
/// `mbpp/sanitized-mbpp.json`, relative to the data directory.
pub const MBPP_SANITIZED_FILE: &str = "mbpp/sanitized-mbpp.json";
/// `humaneval/HumanEval.jsonl.gz`, relative to the data directory.
pub const HUMANEVAL_FILE: &str = "humaneval/HumanEval.jsonl.gz";

pub use dlm_sdk::data::pinned_sha256;

/// MBPP's test split (task ids 11–510, the README's evaluation set).
pub const MBPP_TEST_IDS: std::ops::RangeInclusive<u32> = 11..=510;
/// MBPP's prompt split (task ids 1–10).
pub const MBPP_PROMPT_IDS: std::ops::RangeInclusive<u32> = 1..=10;
/// The few-shot examples of the MBPP paper and lm-eval's `mbpp` task (task ids 2, 3, 4).
pub const MBPP_FEWSHOT_IDS: [u32; 3] = [2, 3, 4];

/// A data error, naming the file (and line, where there is one).
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file cannot be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file's sha256 is not the one in `data/SHA256SUMS`.
    #[error("{path}: sha256 mismatch: expected {expected}, found {actual} (a different version of the file? data/README.md names the pinned ones)")]
    Checksum {
        /// The file.
        path: PathBuf,
        /// From `data/SHA256SUMS`.
        expected: String,
        /// Of the file.
        actual: String,
    },
    /// Invalid JSON, or a row missing a field.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One task of `mbpp.jsonl`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MbppTask {
    /// 1–974.
    pub task_id: u32,
    /// The problem statement.
    pub text: String,
    /// The reference solution (`\r\n` line endings, as in the file).
    pub code: String,
    /// Run after the code, before the tests (empty in all but a few tasks).
    pub test_setup_code: String,
    /// Three `assert` statements.
    pub test_list: Vec<String>,
    /// Extra, harder asserts (non-empty in a few tasks).
    pub challenge_test_list: Vec<String>,
}

/// One task of `sanitized-mbpp.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SanitizedMbppTask {
    /// The notebook the task came from.
    pub source_file: String,
    /// The `mbpp.jsonl` task id.
    pub task_id: u32,
    /// The (reworded) problem statement.
    pub prompt: String,
    /// The reference solution.
    pub code: String,
    /// Imports the tests need, run before the code.
    pub test_imports: Vec<String>,
    /// The asserts.
    pub test_list: Vec<String>,
}

/// One task of `HumanEval.jsonl.gz`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanEvalTask {
    /// `HumanEval/0` … `HumanEval/163`.
    pub task_id: String,
    /// Signature and docstring: the prompt, which the completion continues.
    pub prompt: String,
    /// The reference body.
    pub canonical_solution: String,
    /// Defines `check(candidate)`.
    pub test: String,
    /// The function `check` is called with.
    pub entry_point: String,
}

/// A data directory.
#[derive(Clone, Debug)]
pub struct DataDir {
    root: PathBuf,
    verify: bool,
}

impl DataDir {
    /// `$DLM_BENCH_DATA` (if set and not empty), or [`DataDir::default_root`].
    pub fn from_env() -> Self {
        Self::new(dlm_sdk::data::data_dir())
    }

    /// `<workspace root>/data`, the copies committed with the repository.
    pub fn default_root() -> PathBuf {
        dlm_sdk::data::repository_data_dir()
    }

    /// A given directory; sha256 checking on.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DataDir {
            root: root.into(),
            verify: true,
        }
    }

    /// Turns sha256 checking off (for user-supplied variants of the files).
    pub fn without_checksums(mut self) -> Self {
        self.verify = false;
        self
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The full path of a file in it.
    pub fn path(&self, file: &str) -> PathBuf {
        self.root.join(file)
    }

    /// Whether the file exists (for skipping tests when the data is absent).
    pub fn has(&self, file: &str) -> bool {
        self.path(file).is_file()
    }

    fn read(&self, file: &str) -> Result<(PathBuf, Vec<u8>), DataError> {
        let path = self.path(file);
        let bytes = std::fs::read(&path).map_err(|source| DataError::Io {
            path: path.clone(),
            source,
        })?;
        if self.verify {
            if let Some(expected) = pinned_sha256(file) {
                let actual = hex(&Sha256::digest(&bytes));
                if actual != *expected {
                    return Err(DataError::Checksum {
                        path,
                        expected: expected.to_string(),
                        actual,
                    });
                }
            }
        }
        Ok((path, bytes))
    }

    /// The lower-case hex sha256 of a file's bytes (for the run record: with checking off, the
    /// file read need not be the pinned one).
    pub fn sha256(&self, file: &str) -> Result<String, DataError> {
        let path = self.path(file);
        let bytes = std::fs::read(&path).map_err(|source| DataError::Io { path, source })?;
        Ok(hex(&Sha256::digest(&bytes)))
    }

    /// All 974 tasks of `mbpp.jsonl`, in file order.
    pub fn load_mbpp(&self) -> Result<Vec<MbppTask>, DataError> {
        let (path, bytes) = self.read(MBPP_FILE)?;
        parse_jsonl(&path, &bytes)
    }

    /// The 427 tasks of `sanitized-mbpp.json`.
    pub fn load_mbpp_sanitized(&self) -> Result<Vec<SanitizedMbppTask>, DataError> {
        let (path, bytes) = self.read(MBPP_SANITIZED_FILE)?;
        serde_json::from_slice(&bytes).map_err(|e| DataError::Parse {
            path,
            line: e.line(),
            message: e.to_string(),
        })
    }

    /// The 164 tasks of `HumanEval.jsonl.gz`.
    pub fn load_humaneval(&self) -> Result<Vec<HumanEvalTask>, DataError> {
        let (path, bytes) = self.read(HUMANEVAL_FILE)?;
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut raw)
            .map_err(|e| DataError::Parse {
                path: path.clone(),
                line: 0,
                message: format!("not valid gzip: {e}"),
            })?;
        parse_jsonl(&path, &raw)
    }
}

/// Parses JSON Lines (blank lines skipped), naming the line of the first bad row.
pub fn parse_jsonl<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<T>, DataError> {
    let text = std::str::from_utf8(bytes).map_err(|e| DataError::Parse {
        path: path.to_path_buf(),
        line: bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1,
        message: format!("not UTF-8: {e}"),
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| DataError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?);
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// MBPP's test split (11–510) of `tasks`.
pub fn mbpp_test_split(tasks: &[MbppTask]) -> Vec<&MbppTask> {
    tasks
        .iter()
        .filter(|t| MBPP_TEST_IDS.contains(&t.task_id))
        .collect()
}

/// The part of an MBPP prompt for one task, as lm-eval's `mbpp.yaml` `doc_to_text`:
/// `You are an expert Python programmer, and here is your task: {text} Your code should pass
/// these tests:\n\n{test_list[0]}\n{test_list[1]}\n{test_list[2]}\n[BEGIN]\n`.
pub fn mbpp_doc_to_text(text: &str, tests: &[String]) -> String {
    format!(
        "You are an expert Python programmer, and here is your task: {text} Your code should \
         pass these tests:\n\n{}\n[BEGIN]\n",
        tests.join("\n")
    )
}

/// The few-shot MBPP prompt of lm-eval's `mbpp` task (and the MBPP paper): for each shot,
/// `doc_to_text(shot) + code + "\n[DONE]"`, shots separated by `"\n\n"`, then `"\n\n"` and
/// `doc_to_text(task)`. The model should continue with code and stop at `[DONE]`. `shots` are
/// normally tasks 2, 3, 4 ([`MBPP_FEWSHOT_IDS`]).
pub fn mbpp_prompt(task: &MbppTask, shots: &[&MbppTask]) -> String {
    fewshot_prompt(
        shots
            .iter()
            .map(|t| (t.text.as_str(), &t.test_list[..], t.code.as_str())),
        &task.text,
        &task.test_list,
    )
}

/// [`mbpp_prompt`]'s format for sanitized MBPP: each shot's (reworded) `prompt`, its
/// `test_list` and `code`, then the task's. `shots` are normally the sanitized versions of
/// tasks 2, 3, 4 ([`mbpp_sanitized_fewshot`]).
pub fn mbpp_sanitized_prompt(task: &SanitizedMbppTask, shots: &[&SanitizedMbppTask]) -> String {
    fewshot_prompt(
        shots
            .iter()
            .map(|t| (t.prompt.as_str(), &t.test_list[..], t.code.as_str())),
        &task.prompt,
        &task.test_list,
    )
}

/// `(text, tests, code)` of each shot, then the task's text and tests.
fn fewshot_prompt<'a>(
    shots: impl Iterator<Item = (&'a str, &'a [String], &'a str)>,
    text: &str,
    tests: &[String],
) -> String {
    let mut s = String::new();
    for (shot_text, shot_tests, code) in shots {
        s.push_str(&mbpp_doc_to_text(shot_text, shot_tests));
        s.push_str(code);
        s.push_str("\n[DONE]\n\n");
    }
    s.push_str(&mbpp_doc_to_text(text, tests));
    s
}

/// The few-shot examples ([`MBPP_FEWSHOT_IDS`]) from a loaded `mbpp.jsonl`.
pub fn mbpp_fewshot(tasks: &[MbppTask]) -> Vec<&MbppTask> {
    MBPP_FEWSHOT_IDS
        .iter()
        .filter_map(|id| tasks.iter().find(|t| t.task_id == *id))
        .collect()
}

/// The few-shot examples ([`MBPP_FEWSHOT_IDS`]) from a loaded `sanitized-mbpp.json` (all three
/// are in it).
pub fn mbpp_sanitized_fewshot(tasks: &[SanitizedMbppTask]) -> Vec<&SanitizedMbppTask> {
    MBPP_FEWSHOT_IDS
        .iter()
        .filter_map(|id| tasks.iter().find(|t| t.task_id == *id))
        .collect()
}

/// Sanitized MBPP's test split: its tasks with ids in [`MBPP_TEST_IDS`] (257 of 427).
pub fn mbpp_sanitized_test_split(tasks: &[SanitizedMbppTask]) -> Vec<&SanitizedMbppTask> {
    tasks
        .iter()
        .filter(|t| MBPP_TEST_IDS.contains(&t.task_id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_errors_name_the_line() {
        let bad = b"{\"task_id\": \"HumanEval/0\", \"prompt\": \"\", \"canonical_solution\": \"\", \"test\": \"\", \"entry_point\": \"f\"}\n\n{\"task_id\": \"x\"}\n";
        let err = parse_jsonl::<HumanEvalTask>(Path::new("x.jsonl"), bad).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("x.jsonl:3: missing field"), "{msg}");
    }

    #[test]
    fn every_file_is_pinned() {
        for file in [MBPP_FILE, MBPP_SANITIZED_FILE, HUMANEVAL_FILE] {
            let sum = pinned_sha256(file).unwrap_or_else(|| panic!("{file} is not pinned"));
            assert!(
                sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()),
                "{file}: {sum}"
            );
        }
        assert_eq!(pinned_sha256("mbpp/other.jsonl"), None);
        assert_eq!(pinned_sha256("mbpp.jsonl"), None);
    }

    #[test]
    fn checksum_mismatch_is_an_error() {
        let dir = std::env::temp_dir().join(format!("dlm-code-data-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("mbpp")).unwrap();
        std::fs::write(dir.join(MBPP_FILE), b"{}\n").unwrap();
        let err = DataDir::new(&dir).load_mbpp().unwrap_err();
        assert!(matches!(err, DataError::Checksum { .. }), "{err}");
        assert!(err.to_string().contains("mbpp.jsonl: sha256 mismatch"));
        let err = DataDir::new(&dir)
            .without_checksums()
            .load_mbpp()
            .unwrap_err();
        assert!(
            err.to_string().contains("mbpp.jsonl:1: missing field"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn prompt_format() {
        let shot = MbppTask {
            task_id: 2,
            text: "Do A.".into(),
            code: "def a():\r\n  return 1".into(),
            test_setup_code: String::new(),
            test_list: vec!["assert a() == 1".into(), "assert a()".into()],
            challenge_test_list: vec![],
        };
        let task = MbppTask {
            task_id: 11,
            text: "Do B.".into(),
            test_list: vec!["assert b() == 2".into()],
            ..shot.clone()
        };
        let p = mbpp_prompt(&task, &[&shot]);
        assert_eq!(
            p,
            "You are an expert Python programmer, and here is your task: Do A. Your code should \
             pass these tests:\n\nassert a() == 1\nassert a()\n[BEGIN]\ndef a():\r\n  return 1\n\
             [DONE]\n\nYou are an expert Python programmer, and here is your task: Do B. Your \
             code should pass these tests:\n\nassert b() == 2\n[BEGIN]\n"
        );
    }
}
