//! Turning a model completion into the code to run, as the benchmarks' harnesses do.
//!
//! * HumanEval: the completion continues the prompt (a signature and docstring) and is cut at
//!   the first of [`HUMANEVAL_STOP_SEQUENCES`] — `\nclass`, `\ndef`, `\n#`, `\nif`, `\nprint`,
//!   the stop sequences of the Codex paper (Chen et al. 2021, arXiv:2107.03374, §3.2) and of
//!   `openai/human-eval`'s sampling instructions. The program is `prompt + completion`.
//! * MBPP: lm-eval's `mbpp` task (`lm_eval/tasks/mbpp/mbpp.yaml`) generates until `[DONE]`
//!   ([`MBPP_STOP_SEQUENCES`]), then its `extract_code_blocks` filter (`utils.py`) takes the
//!   first fenced block if there is one, else the whole text. lm-eval also prefixes
//!   `from __future__ import annotations`; that is not done here (it changes nothing for these
//!   programs but the line numbers).

/// Stop sequences for HumanEval completions (Codex paper; `openai/human-eval`).
pub const HUMANEVAL_STOP_SEQUENCES: [&str; 5] = ["\nclass", "\ndef", "\n#", "\nif", "\nprint"];

/// Stop sequences for the few-shot MBPP prompt (lm-eval `mbpp.yaml`, the MBPP paper).
pub const MBPP_STOP_SEQUENCES: [&str; 1] = ["[DONE]"];

/// `text` up to (not including) the earliest occurrence of any of the stop sequences: the
/// one definition every text task cuts completions with.
pub use dlm_sdk::cut_at_first_stop as truncate_at_stops;

/// The contents of the first fenced code block (```` ``` ```` or ```` ```python ````, any info
/// word) in `text`, or `None`. An unclosed fence runs to the end of the text.
/// Mirrors the regex ```` ```(?:\w+)?\n?(.*?)\n?``` ```` of lm-eval's `extract_code_blocks`.
pub fn first_fenced_block(text: &str) -> Option<&str> {
    let open = text.find("```")?;
    let mut rest = &text[open + 3..];
    // An optional info word (`python`, `py3`…), then an optional newline.
    let word = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    rest = &rest[word..];
    rest = rest.strip_prefix('\n').unwrap_or(rest);
    let body = match rest.find("```") {
        Some(close) => &rest[..close],
        None => rest,
    };
    Some(body.strip_suffix('\n').unwrap_or(body))
}

/// The code of an MBPP completion: cut at `[DONE]`, then the first fenced block if any.
pub fn extract_mbpp(completion: &str) -> String {
    let text = truncate_at_stops(completion, &MBPP_STOP_SEQUENCES);
    first_fenced_block(text).unwrap_or(text).to_string()
}

/// The body of a HumanEval completion: cut at the first stop sequence. (Append it to the
/// prompt; [`crate::TestProgram::humaneval`] does.)
pub fn extract_humaneval(completion: &str) -> String {
    truncate_at_stops(completion, &HUMANEVAL_STOP_SEQUENCES).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humaneval_stops() {
        let c = "    return a + b\n\n\ndef other():\n    pass\n";
        assert_eq!(extract_humaneval(c), "    return a + b\n\n");
        let c = "    x = 1\n    # keep indented comments\n    return x\n# top-level comment\n";
        assert_eq!(
            extract_humaneval(c),
            "    x = 1\n    # keep indented comments\n    return x"
        );
        let c = "    return 1\nif __name__ == '__main__':\n    print(f())";
        assert_eq!(extract_humaneval(c), "    return 1");
        assert_eq!(extract_humaneval("    return 1"), "    return 1");
        assert_eq!(extract_humaneval("\nclass X: pass"), "");
    }

    #[test]
    fn mbpp_done_and_fences() {
        assert_eq!(
            extract_mbpp("def f():\n  return 1\n[DONE]\nmore"),
            "def f():\n  return 1\n"
        );
        assert_eq!(
            extract_mbpp("Here:\n```python\ndef f():\n  return 1\n```\nThanks"),
            "def f():\n  return 1"
        );
        assert_eq!(extract_mbpp("```\nx = 1\n```"), "x = 1");
        assert_eq!(extract_mbpp("```py\nx = 1"), "x = 1");
        assert_eq!(extract_mbpp("x = 2"), "x = 2");
        assert_eq!(
            extract_mbpp("```python\na = 1\n```\n```python\nb = 2\n```"),
            "a = 1"
        );
    }

    #[test]
    fn earliest_stop_wins() {
        assert_eq!(
            truncate_at_stops("a\nif b\ndef c", &HUMANEVAL_STOP_SEQUENCES),
            "a"
        );
        assert_eq!(truncate_at_stops::<&str>("abc", &[]), "abc");
    }
}
