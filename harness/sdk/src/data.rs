//! The benchmark data committed with the repository (`data/`: GSM8K, MBPP, HumanEval), shared by
//! the plugins that read it: where it is, and the sha256 every file must have.

use std::path::{Path, PathBuf};

/// Environment variable naming another data directory, laid out like `data/`.
pub const DATA_ENV: &str = "DLM_BENCH_DATA";

/// The repository's `data/SHA256SUMS` (`sha256sum` format), compiled in: the one table of pinned
/// sums, checked against the files by `tests/data.rs`.
const PINNED_SUMS: &str = include_str!("../../../data/SHA256SUMS");

/// The pinned sha256 (lower-case hex) of `file`, a path relative to the data directory, from
/// `data/SHA256SUMS`; `None` for a file the table does not list.
pub fn pinned_sha256(file: &str) -> Option<&'static str> {
    PINNED_SUMS.lines().find_map(|line| {
        // `<sum>  <name>`, or `<sum> *<name>` as `sha256sum --binary` writes it.
        let (sum, rest) = line.split_once(' ')?;
        (rest.strip_prefix([' ', '*'])? == file).then_some(sum)
    })
}

/// `<workspace root>/data`, the copies committed with the repository (this crate is
/// `<workspace root>/harness/sdk`).
pub fn repository_data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the SDK lies two folders below the workspace root")
        .join("data")
}

/// The data directory: `$DLM_BENCH_DATA` if set (and not empty), else
/// [`repository_data_dir`].
pub fn data_dir() -> PathBuf {
    match std::env::var_os(DATA_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repository_data_dir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_file_is_pinned_and_lies_in_the_repository_data() {
        for file in [
            "gsm8k/train.jsonl",
            "gsm8k/test.jsonl",
            "mbpp/mbpp.jsonl",
            "mbpp/sanitized-mbpp.json",
            "humaneval/HumanEval.jsonl.gz",
        ] {
            let sum = pinned_sha256(file).unwrap_or_else(|| panic!("{file} is not pinned"));
            assert_eq!(sum.len(), 64, "{file}: {sum}");
            assert!(repository_data_dir().join(file).is_file(), "{file}");
        }
        assert_eq!(pinned_sha256("gsm8k/dev.jsonl"), None);
    }
}
