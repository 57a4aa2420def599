//! What the code-task tests share: HumanEval's problems as the repository's data holds them, and
//! the rule for a cell the sandbox refused.

use super::{root, skip};
use serde_json::Value;

/// Every HumanEval problem, in file order, as its JSON object (`task_id`, `prompt`,
/// `canonical_solution`, …), read with python3's gzip (the sandbox runs python3 anyway).
pub fn problems() -> Vec<Value> {
    let path = root().join("data/humaneval/HumanEval.jsonl.gz");
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import gzip, sys; sys.stdout.buffer.write(gzip.open(sys.argv[1]).read())",
        ])
        .arg(&path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}: {} (the repository's data/, see data/README.md)",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("HumanEval is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("HumanEval rows are JSON"))
        .collect()
}

/// A string field of a problem.
pub fn field(problem: &Value, key: &str) -> String {
    problem[key]
        .as_str()
        .unwrap_or_else(|| panic!("HumanEval row without `{key}`"))
        .to_string()
}

/// Whether the sandbox's refusal is why a cell failed: skip (visibly), or fail where the
/// sandbox is required.
pub fn sandbox_unavailable(cell: &Value) -> bool {
    let cause = cell["cause"].as_str().unwrap_or_default();
    if !cause.contains("the sandbox is unavailable") {
        return false;
    }
    skip::absent(&skip::SANDBOX, cause);
    true
}
