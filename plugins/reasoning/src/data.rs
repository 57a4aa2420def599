//! The pinned GSM8K files: `gsm8k/test.jsonl` and `gsm8k/train.jsonl` under a data directory
//! (by default the repository's `data/`), checked against the sha256 sums in `data/SHA256SUMS`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::answer::gold_answer;
use crate::arith::parse_answer;

pub use dlm_sdk::data::{pinned_sha256, DATA_ENV};

/// A GSM8K split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// `gsm8k/test.jsonl`, 1,319 problems.
    Test,
    /// `gsm8k/train.jsonl`, 7,473 problems.
    Train,
}

impl Split {
    /// Path relative to the data directory.
    pub fn relative_path(self) -> &'static str {
        match self {
            Split::Test => "gsm8k/test.jsonl",
            Split::Train => "gsm8k/train.jsonl",
        }
    }

    /// The pinned sha256 (lower-case hex), from `data/SHA256SUMS`.
    pub fn sha256(self) -> &'static str {
        pinned_sha256(self.relative_path())
            .expect("data/SHA256SUMS pins both GSM8K splits (unit test `every_split_is_pinned`)")
    }

    /// Number of problems in the pinned file.
    pub fn problems(self) -> usize {
        match self {
            Split::Test => 1319,
            Split::Train => 7473,
        }
    }
}

/// One GSM8K problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line in the file.
    pub line: usize,
    /// The question.
    pub question: String,
    /// The worked solution with `<<…>>` annotations and the final `#### n` line.
    pub answer: String,
    /// The gold final answer: the text after `#### ` (may contain commas).
    pub gold: String,
}

/// Why GSM8K data could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file does not exist.
    #[error(
        "GSM8K file {path} not found; restore the repository's data/gsm8k/ (see data/README.md) or \
         set {DATA_ENV} (or the task's `data_dir`) to the folder that contains `gsm8k/`"
    )]
    Missing {
        /// The expected path.
        path: PathBuf,
    },
    /// Reading failed.
    #[error("cannot read GSM8K file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not the pinned copy.
    #[error(
        "GSM8K file {path} has sha256 {actual}, expected {expected}; it is not the pinned copy — \
         replace it with the file listed in data/README.md (openai/grade-school-math commit \
         3101c7d), whose sum data/SHA256SUMS pins"
    )]
    HashMismatch {
        /// The file.
        path: PathBuf,
        /// Its sha256.
        actual: String,
        /// The pinned sha256.
        expected: String,
    },
    /// A line is not a GSM8K record.
    #[error(
        "{path}:{line}: {message}; each line must be a JSON object with string fields \
         \"question\" and \"answer\", the answer ending in `#### <number>`"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

pub use dlm_sdk::data::{data_dir as default_data_dir, repository_data_dir};

/// Loads a split from `data_dir`, checking its sha256 and every line.
pub fn load(data_dir: &Path, split: Split) -> Result<Vec<Problem>, DataError> {
    let path = data_dir.join(split.relative_path());
    let bytes = std::fs::read(&path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            DataError::Missing { path: path.clone() }
        } else {
            DataError::Io {
                path: path.clone(),
                source,
            }
        }
    })?;
    let actual = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    if actual != split.sha256() {
        return Err(DataError::HashMismatch {
            path,
            actual,
            expected: split.sha256().to_owned(),
        });
    }
    parse_jsonl(&bytes, &path)
}

#[derive(Deserialize)]
struct Record {
    question: String,
    answer: String,
}

/// Parses GSM8K JSON lines without a hash check (for fixtures and user files); `path` is only
/// used in error messages. Blank lines are ignored.
pub fn parse_jsonl(bytes: &[u8], path: &Path) -> Result<Vec<Problem>, DataError> {
    let malformed = |line: usize, message: String| DataError::Malformed {
        path: path.to_owned(),
        line,
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        malformed(line, "not UTF-8".into())
    })?;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let rec: Record = serde_json::from_str(raw).map_err(|e| malformed(line, e.to_string()))?;
        let gold = gold_answer(&rec.answer)
            .ok_or_else(|| malformed(line, "the answer has no `#### ` line".into()))?;
        if parse_answer(gold).is_none() {
            return Err(malformed(
                line,
                format!("the gold answer {gold:?} is not a number"),
            ));
        }
        out.push(Problem {
            line,
            gold: gold.to_owned(),
            question: rec.question,
            answer: rec.answer,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_and_gold() {
        let text = br#"{"question": "q1", "answer": "1+1=<<1+1=2>>2\n#### 2"}

{"question": "q2", "answer": "so\n#### 1,200"}
"#;
        let p = parse_jsonl(text, Path::new("x.jsonl")).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].gold, "2");
        assert_eq!(p[1].gold, "1,200");
        assert_eq!(p[1].line, 3);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let cases: [(&[u8], &str); 4] = [
            (
                b"{\"question\": \"q\", \"answer\": \"#### 1\"}\nnot json\n",
                ":2:",
            ),
            (b"{\"question\": \"q\"}\n", "missing field"),
            (
                b"{\"question\": \"q\", \"answer\": \"no hashes\"}\n",
                "no `#### `",
            ),
            (
                b"{\"question\": \"q\", \"answer\": \"#### five\"}\n",
                "not a number",
            ),
        ];
        for (bytes, needle) in cases {
            let e = parse_jsonl(bytes, Path::new("data/bad.jsonl")).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("data/bad.jsonl:"), "{msg}");
            assert!(msg.contains(needle), "{msg}");
        }
        let e = parse_jsonl(b"{\"a\xff\"}", Path::new("u.jsonl")).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"));
    }

    #[test]
    fn every_split_is_pinned() {
        for split in [Split::Test, Split::Train] {
            let sum = pinned_sha256(split.relative_path()).expect("pinned");
            assert!(
                sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()),
                "{sum}"
            );
        }
        assert_eq!(pinned_sha256("gsm8k/other.jsonl"), None);
        assert_eq!(pinned_sha256("test.jsonl"), None);
    }

    #[test]
    fn missing_file_and_hash_mismatch_are_clear() {
        let dir = std::env::temp_dir().join(format!("dlm-reasoning-data-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let e = load(&dir, Split::Test).unwrap_err();
        assert!(matches!(e, DataError::Missing { .. }));
        assert!(e.to_string().contains(DATA_ENV), "{e}");
        assert!(e.to_string().contains("gsm8k/test.jsonl"), "{e}");
        std::fs::create_dir_all(dir.join("gsm8k")).unwrap();
        std::fs::write(
            dir.join("gsm8k/test.jsonl"),
            "{\"question\": \"q\", \"answer\": \"#### 1\"}\n",
        )
        .unwrap();
        let e = load(&dir, Split::Test).unwrap_err();
        assert!(matches!(e, DataError::HashMismatch { .. }));
        assert!(e.to_string().contains(Split::Test.sha256()), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
