#!/usr/bin/env python3
"""Writes plugins/reasoning/tests/fixtures/gsm8k_scoring.jsonl: hand-written GSM8K generations
scored by lm-evaluation-harness's own code (see README.md in this folder for the version).

For each case the script loads lm-eval's installed task file (`gsm8k.yaml` or `gsm8k-cot.yaml`),
builds its two filter pipelines with `lm_eval.filters.build_filter_ensemble` exactly as
`ConfigurableTask` does, renders the target with `lm_eval.utils.apply_template(doc_to_target)`,
and scores with the registered `exact_match` metric and the YAML's metric kwargs, as
`ConfigurableTask.process_results` does for `generate_until`. Nothing of lm-eval is
re-implemented here.

`numeric_strict` / `numeric_flexible` are dlm-bench's `scoring: numeric` rule, written
independently here (exact fractions after removing `,`, `$`, surrounding whitespace and one
trailing `.`; a decimal point needs a digit after it); the Rust test checks that the plugin's
numeric mode, and its scorer from before `scoring` existed, give them.

Run from the repository root: python3 tools/lm-eval-fixtures/make_gsm8k_scoring.py
"""

import json
import os
import re
from fractions import Fraction

import yaml

import lm_eval
from lm_eval.api.instance import Instance
from lm_eval.api.registry import get_metric
from lm_eval.filters import build_filter_ensemble
from lm_eval.utils import apply_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASK_FILES = {"gsm8k": "gsm8k.yaml", "gsm8k-cot": "gsm8k-cot.yaml"}

# (format, test doc_id, completion). Golds: 0 → 18, 2 → 70000, 14 → 60, 18 → 7, 61 → 1430,
# 146 → 2,125, 201 → 114,200, 489 → -10, 1113 → -3.
CASES = [
    ("gsm8k", 0, "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18"),
    ("gsm8k", 14, "#### 060"),
    ("gsm8k", 14, "#### 60"),
    ("gsm8k", 18, "#### 7.0"),
    ("gsm8k", 18, "#### 7."),
    ("gsm8k", 61, "#### $1,430.00"),
    ("gsm8k", 61, "#### 1,430.00"),
    ("gsm8k", 61, "The total is $1,430."),
    ("gsm8k", 0, "####18"),
    ("gsm8k", 0, "She has 9 eggs.\n#### 17\n#### 18"),
    ("gsm8k", 0, "#### 18\n#### 17"),
    ("gsm8k", 489, "#### -10"),
    ("gsm8k", 489, "#### - 10"),
    ("gsm8k", 489, "The temperature fell by 10 degrees, so it is -10."),
    ("gsm8k", 1113, "#### -3.0"),
    ("gsm8k", 0, "#### 18.00"),
    ("gsm8k", 0, "#### 18 eggs"),
    ("gsm8k", 0, "She makes $18 every day.\n#### $18"),
    ("gsm8k", 0, ""),
    ("gsm8k", 0, "I don't know."),
    ("gsm8k", 0, "The answer is 18."),
    ("gsm8k", 146, "#### 2,125"),
    ("gsm8k", 146, "#### 2125"),
    ("gsm8k", 146, "#### 2.125"),
    ("gsm8k", 146, "#### 21,25"),
    ("gsm8k", 201, "#### 114200.0"),
    ("gsm8k", 2, "#### 70,000"),
    ("gsm8k", 2, "#### 70000.00"),
    ("gsm8k", 2, "#### 7e4"),
    ("gsm8k", 0, "#### 18\n"),
    ("gsm8k", 0, "####  18"),
    ("gsm8k", 0, "#### 18.\n\n"),
    ("gsm8k", 0, "#### .18"),
    ("gsm8k", 0, "#### 18..."),
    ("gsm8k", 0, "#### 18.."),
    ("gsm8k", 0, "#### 1,8"),
    ("gsm8k", 0, "#### 018"),
    ("gsm8k", 0, "#### 18.5"),
    ("gsm8k", 0, "#### $18.00"),
    ("gsm8k", 0, "The eggs cost $2 each, so 9 * 2 = 18 dollars."),
    ("gsm8k", 0, "9 * 2 = 18 dollars. She made $18.00 in total."),
    ("gsm8k", 0, "She makes 18 dollars per day for 7 days"),
    ("gsm8k", 0, "#### 18 \n"),
    ("gsm8k", 0, "  ####   18  "),
    ("gsm8k", 0, "#### -18"),
    ("gsm8k", 0, "\t#### 18\t"),
    ("gsm8k", 14, "#### 60 minutes"),
    ("gsm8k", 14, "It takes 1 hour, i.e. 60 minutes."),
    ("gsm8k", 14, "The answer is 60.0 minutes"),
    ("gsm8k", 14, "#### 6O"),
    ("gsm8k", 14, "#### 60%"),
    ("gsm8k", 61, "#### 1430"),
    ("gsm8k", 61, "#### 1.430"),
    ("gsm8k", 61, "#### 1430.0."),
    ("gsm8k", 61, "Total: $1430"),
    ("gsm8k", 1113, "#### -3"),
    ("gsm8k", 1113, "#### \u22123"),
    ("gsm8k", 1113, "#### 3"),
    ("gsm8k", 1113, "The change is -3.00"),
    ("gsm8k", 489, "#### -0010"),
    ("gsm8k", 18, "7 apples, 7 pears\n#### 7,"),
    ("gsm8k", 18, "#### 7,0"),
    ("gsm8k", 201, "#### 114,200 dollars, or $114,200.00 in all"),
    ("gsm8k-cot", 0, "She has 16 - 3 - 4 = 9 eggs. 9 * 2 = 18. The answer is 18."),
    ("gsm8k-cot", 0, "The answer is 18"),
    ("gsm8k-cot", 0, "The answer is $18."),
    ("gsm8k-cot", 0, "The answer is 18.00."),
    ("gsm8k-cot", 14, "The answer is 060."),
    ("gsm8k-cot", 18, "The answer is 7.0."),
    ("gsm8k-cot", 61, "The answer is 1,430."),
    ("gsm8k-cot", 61, "The answer is $1,430.00."),
    ("gsm8k-cot", 489, "The answer is -10."),
    ("gsm8k-cot", 146, "The answer is 2,125 dollars."),
    ("gsm8k-cot", 146, "The answer is 2125."),
    ("gsm8k-cot", 0, "#### 18"),
    ("gsm8k-cot", 0, "The answer is 17. The answer is 18."),
    ("gsm8k-cot", 0, "the answer is 18."),
    ("gsm8k-cot", 0, "The answer is 18.\n"),
    ("gsm8k-cot", 2, "The answer is 70000."),
    ("gsm8k-cot", 2, "The answer is 70,000.0."),
    ("gsm8k-cot", 1113, "The answer is -3.0."),
    ("gsm8k-cot", 0, ""),
]


def task_config(fmt):
    path = os.path.join(os.path.dirname(lm_eval.__file__), "tasks", "gsm8k", TASK_FILES[fmt])
    with open(path) as f:
        return yaml.safe_load(f)


def filter_pipelines(config):
    # As ConfigurableTask.__init__ builds `self._filters` from `filter_list`.
    pipelines = {}
    for entry in config["filter_list"]:
        components = [
            [f["function"], {k: v for k, v in f.items() if k != "function"}]
            for f in entry["filter"]
        ]
        pipelines[entry["name"]] = build_filter_ensemble(entry["name"], components)
    return pipelines


def exact_match(config, doc, filtered):
    # As ConfigurableTask.__init__ (metric kwargs) and process_results (generate_until).
    (metric_config,) = config["metric_list"]
    kwargs = {
        k: v
        for k, v in metric_config.items()
        if k not in ["metric", "aggregation", "higher_is_better", "hf_evaluate"]
    }
    gold = apply_template(config["doc_to_target"], doc)
    fn = get_metric(metric_config["metric"], False)
    return fn(references=[gold], predictions=[filtered], **kwargs)["exact_match"]


def numeric(extracted, gold):
    """dlm-bench's numeric rule, independently: exact fractions after the removals."""

    def parse(s):
        t = s.replace(",", "").replace("$", "").strip()
        if t.endswith("."):
            t = t[:-1]
        # A decimal point must be followed by a digit (`18.` after the one `.` removed is not
        # a number), as dlm-reasoning's `arith::parse_answer` reads it.
        if not re.fullmatch(r"-?(\d+(\.\d+)?|\.\d+)", t):
            return None
        return Fraction(t)

    if extracted == "[invalid]":
        return False
    a, b = parse(extracted), parse(gold)
    return a is not None and b is not None and a == b


def main():
    docs = []
    with open(os.path.join(ROOT, "data", "gsm8k", "test.jsonl")) as f:
        docs = [json.loads(line) for line in f]
    configs = {fmt: task_config(fmt) for fmt in TASK_FILES}
    pipelines = {fmt: filter_pipelines(c) for fmt, c in configs.items()}
    out_path = os.path.join(ROOT, "plugins", "reasoning", "tests", "fixtures", "gsm8k_scoring.jsonl")
    totals = {}
    with open(out_path, "w") as out:
        for fmt, doc_id, completion in CASES:
            doc = docs[doc_id]
            config = configs[fmt]
            filtered = {}
            for name, pipeline in pipelines[fmt].items():
                inst = Instance("generate_until", doc, ("", {}), doc_id)
                inst.resps = [completion]
                pipeline.apply([inst])
                filtered[name] = inst.filtered_resps[name]
            gold = doc["answer"].split("#### ")[-1].strip()
            row = {
                "format": fmt,
                "doc_id": doc_id,
                "completion": completion,
                "answer": doc["answer"],
                "gold": gold,
                "strict_filtered": filtered["strict-match"],
                "flexible_filtered": filtered["flexible-extract"],
                "lm_eval_strict": bool(exact_match(config, doc, filtered["strict-match"])),
                "lm_eval_flexible": bool(exact_match(config, doc, filtered["flexible-extract"])),
                "numeric_strict": numeric(filtered["strict-match"], gold),
                "numeric_flexible": numeric(filtered["flexible-extract"], gold),
            }
            for key in ["lm_eval_strict", "lm_eval_flexible", "numeric_strict", "numeric_flexible"]:
                totals[key] = totals.get(key, 0) + row[key]
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"lm-eval {lm_eval.__version__}: {len(CASES)} lines written to {out_path}")
    print(", ".join(f"{k} {v}/{len(CASES)}" for k, v in totals.items()))


if __name__ == "__main__":
    main()
