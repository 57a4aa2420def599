#!/usr/bin/env python3
"""Writes the malformed-suite corpus next to this script (tests/suite_errors.rs reads it).

Every file is a valid suite with one thing broken. Its first lines say what the harness must
answer:

    # expect: <a fragment of the error message>
    # at: <line>:<column>      (where the error must point; `any`: located, anywhere)

Run `python3 tests/suites/malformed/generate.py` after changing a case; the files are committed.
In a case's text `⟨` marks where the error must point (it is removed from the file).
"""
import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
MARK = "⟨"

BASE = """name: s
samples: 4
batch_size: 2
timeout_seconds: 60
lengths: [8]
seeds: [0]
tasks:
  - name: bigram
    plugin: dlm-formal
    task: ngram
    config: {order: 2}
models:
  - name: oracle
    plugin: dlm-formal
    model: oracle
  - name: mdm
    plugin: dlm-neural
    model: mdm
    train: {steps: 10, batch_size: 4}
    samplers: [ddpm_cache]
samplers:
  - sampler: ddpm_cache
    steps: [1, 2]
  - sampler: left_to_right
"""

CASES = []


def case(name, expect, text):
    CASES.append((name, expect, text))


def mark_start():
    name, expect, text = CASES[-1]
    CASES[-1] = (name, expect, MARK + text)


def mark_at(old, new):
    name, expect, text = CASES[-1]
    assert text.count(old) == 1, (name, old)
    CASES[-1] = (name, expect, text.replace(old, new))


def sub(name, old, new, expect, count=1):
    assert BASE.count(old) == count, (name, old)
    case(name, expect, BASE.replace(old, new))


# --- top-level numbers ----------------------------------------------------------------------
sub("samples-quoted-word", "samples: 4", 'samples: ⟨"many"', "samples must be a whole number")
sub("samples-word", "samples: 4", "samples: ⟨many", "samples must be a whole number")
sub("samples-fraction", "samples: 4", "samples: ⟨1.5", "samples must be a whole number")
sub("samples-power", "samples: 4", "samples: ⟨10^12", "samples must be a whole number")
sub("samples-exponent", "samples: 4", "samples: ⟨1e6", "write `1e6` out in digits")
sub("samples-negative", "samples: 4", "samples: ⟨-1", "samples must be at least 1, got -1")
sub("samples-zero", "samples: 4", "samples: ⟨0", "samples must be at least 1, got 0")
sub("samples-trillion", "samples: 4", "samples: ⟨1000000000000", "samples must be at most 100000000")
sub("samples-overflow", "samples: 4", "samples: ⟨99999999999999999999999", "samples must be at most")
sub("samples-list", "samples: 4", "samples: ⟨[4]", "got a list")
sub("samples-mapping", "samples: 4", "samples: ⟨{n: 4}", "got a mapping")
sub("samples-empty", "samples: 4", "⟨samples: ", "got nothing")
sub("samples-null", "samples: 4", "samples: ⟨~", "samples must be a whole number")
sub("samples-bool", "samples: 4", "samples: ⟨true", "samples must be a whole number")
sub("samples-quoted-number", "samples: 4", 'samples: ⟨"4"', "without quotes")
sub("samples-hex", "samples: 4", "samples: ⟨0x10", "samples must be a whole number")
sub("samples-underscore", "samples: 4", "samples: ⟨1_000", "samples must be a whole number")
sub("batch-zero", "batch_size: 2", "batch_size: ⟨0", "batch_size must be at least 1")
sub("batch-negative", "batch_size: 2", "batch_size: ⟨-5", "batch_size must be at least 1")
sub("batch-word", "batch_size: 2", "batch_size: ⟨big", "batch_size must be a whole number")
sub("batch-fraction", "batch_size: 2", "batch_size: ⟨2.5", "batch_size must be a whole number")
sub("batch-huge", "batch_size: 2", "batch_size: ⟨2000000", "batch_size must be at most 1000000")
sub("batch-list", "batch_size: 2", "batch_size: ⟨[2]", "got a list")
sub("timeout-1e20", "timeout_seconds: 60", "timeout_seconds: ⟨1e20", "timeout_seconds must be at most 604800")
sub("timeout-1e300", "timeout_seconds: 60", "timeout_seconds: ⟨1e300", "timeout_seconds must be at most 604800")
sub("timeout-week-and-a-second", "timeout_seconds: 60", "timeout_seconds: ⟨604801", "at most 604800")
sub("timeout-zero", "timeout_seconds: 60", "timeout_seconds: ⟨0", "timeout_seconds must be positive")
sub("timeout-negative", "timeout_seconds: 60", "timeout_seconds: ⟨-1", "timeout_seconds must be positive")
sub("timeout-inf", "timeout_seconds: 60", "timeout_seconds: ⟨inf", "at most 604800")
sub("timeout-yaml-inf", "timeout_seconds: 60", "timeout_seconds: ⟨.inf", "timeout_seconds must be a number of seconds")
sub("timeout-nan", "timeout_seconds: 60", "timeout_seconds: ⟨NaN", "timeout_seconds must be positive")
sub("timeout-word", "timeout_seconds: 60", "timeout_seconds: ⟨forever", "timeout_seconds must be a number of seconds")
sub("timeout-quoted", "timeout_seconds: 60", 'timeout_seconds: ⟨"60"', "timeout_seconds must be a number of seconds")
sub("timeout-list", "timeout_seconds: 60", "timeout_seconds: ⟨[60]", "got a list")
sub("reference-yes", "samples: 4", "samples: 4\nreference: ⟨yes", "`reference` must be `true` or `false`")
sub("reference-number", "samples: 4", "samples: 4\nreference: ⟨1", "`reference` must be `true` or `false`")
sub("name-list", "name: s", "name: ⟨[s]", "`name` must be a non-empty name")
sub("name-mapping", "name: s", "name: ⟨{a: b}", "`name` must be a non-empty name")
sub("name-empty", "name: s", 'name: ⟨""', "`name` must be a non-empty name")
sub("name-blank", "name: s", "⟨name: ", "`name` must be a non-empty name")
sub("description-list", "samples: 4", "samples: 4\ndescription: ⟨[a, b]", "`description` must be text")
sub("description-mapping", "samples: 4", "samples: 4\ndescription: ⟨{a: 1}", "`description` must be text")

# --- lengths and seeds ----------------------------------------------------------------------
sub("lengths-scalar", "lengths: [8]", "lengths: ⟨16", "`lengths` must be a list, e.g. `lengths: [64]`")
sub("lengths-empty", "lengths: [8]", "lengths: ⟨[]", "`lengths` is empty")
sub("lengths-zero", "lengths: [8]", "lengths: [⟨0]", "length must be at least 1")
sub("lengths-negative", "lengths: [8]", "lengths: [8, ⟨-1]", "length must be at least 1")
sub("lengths-duplicate", "lengths: [8]", "lengths: [8, 16, ⟨8]", "`lengths` lists 8 twice (first at line 7:11)")
sub("lengths-duplicate-spelled", "lengths: [8]", "lengths: [8, ⟨008]", "`lengths` lists 8 twice")
sub("lengths-word", "lengths: [8]", "lengths: [8, ⟨sixteen]", "length must be a whole number")
sub("lengths-fraction", "lengths: [8]", "lengths: [⟨8.5]", "length must be a whole number")
sub("lengths-huge", "lengths: [8]", "lengths: [⟨2000000]", "length must be at most 1000000")
sub("lengths-mapping", "lengths: [8]", "lengths: ⟨{a: 8}", "`lengths` must be a list")
sub("lengths-quoted", "lengths: [8]", 'lengths: ⟨"[8]"', "`lengths` must be a list")
sub("lengths-null", "lengths: [8]", "lengths: ⟨~", "`lengths` must be a list")
sub("lengths-nested", "lengths: [8]", "lengths: [⟨[8]]", "length must be a whole number")
sub("lengths-missing", "lengths: [8]\n", "", "the suite has no `lengths`")
mark_start()
sub("seeds-negative", "seeds: [0]", "seeds: [⟨-1]", "seed must be at least 0")
sub("seeds-duplicate", "seeds: [0]", "seeds: [0, 1, ⟨0]", "`seeds` lists 0 twice")
sub("seeds-scalar", "seeds: [0]", "seeds: ⟨0", "`seeds` must be a list")
sub("seeds-empty", "seeds: [0]", "seeds: ⟨[]", "`seeds` is empty")
sub("seeds-word", "seeds: [0]", "seeds: [⟨zero]", "seed must be a whole number")
sub("seeds-fraction", "seeds: [0]", "seeds: [⟨1.5]", "seed must be a whole number")
sub("seeds-overflow", "seeds: [0]", "seeds: [⟨99999999999999999999]", "seed must be at most")

# --- tasks ----------------------------------------------------------------------------------
TASK = """  - name: bigram
    plugin: dlm-formal
    task: ngram
    config: {order: 2}
"""
sub("tasks-scalar", "tasks:\n" + TASK, "tasks: ⟨bigram\n", "`tasks` must be a list")
sub("tasks-empty", "tasks:\n" + TASK, "tasks: ⟨[]\n", "`tasks` is empty")
sub("tasks-mapping", "tasks:\n" + TASK, "tasks: ⟨{bigram: ngram}\n", "`tasks` must be a list")
sub("task-scalar-entry", "tasks:\n" + TASK, "tasks:\n  - ⟨bigram\n", "each entry of `tasks` must be a mapping")
sub("task-list-entry", "tasks:\n" + TASK, "tasks:\n  - ⟨[bigram, dlm-formal]\n", "each entry of `tasks` must be a mapping")
sub("task-missing-plugin", "  - name: bigram\n    plugin: dlm-formal\n", "  - ⟨name: bigram\n", "has no `plugin`")
sub("task-missing-task", "    task: ngram\n", "", "has no `task`")
mark_at("  - name: bigram", "  - ⟨name: bigram")
sub("task-missing-name", "  - name: bigram\n    plugin: dlm-formal\n", "  - ⟨plugin: dlm-formal\n", "has no `name`")
sub("task-unknown-key", "    task: ngram\n", "    task: ngram\n    ⟨confg: {}\n", "unknown key `confg` in this `tasks` entry; did you mean `config`?")
sub("task-config-scalar", "config: {order: 2}", "config: ⟨2", "`config` must be a mapping of settings")
sub("task-config-list", "config: {order: 2}", "config: ⟨[order, 2]", "`config` must be a mapping of settings")
sub("task-name-list", "  - name: bigram", "  - name: ⟨[bigram]", "`name` must be a non-empty name")
sub("task-plugin-empty", "    task: ngram", "    task: ngram", "")  # placeholder, replaced below
CASES.pop()
sub("task-plugin-empty", "    plugin: dlm-formal\n    task", '    plugin: ⟨""\n    task', "`plugin` must be a non-empty name")
sub("task-plugin-mapping", "    plugin: dlm-formal\n    task", "    plugin: ⟨{crate: dlm-formal}\n    task", "`plugin` must be a non-empty name")
sub("task-empty-entry", "tasks:\n" + TASK, "tasks:\n  - ⟨{}\n", "has no `name`")
sub("task-duplicate-name", "    config: {order: 2}\n", "    config: {order: 2}\n  - name: ⟨bigram\n    plugin: dlm-formal\n    task: ngram\n", "duplicate task name `bigram`")

# --- models ---------------------------------------------------------------------------------
sub("models-empty", "models:\n  - name: oracle\n    plugin: dlm-formal\n    model: oracle\n  - name: mdm\n    plugin: dlm-neural\n    model: mdm\n    train: {steps: 10, batch_size: 4}\n    samplers: [ddpm_cache]\n", "models: ⟨[]\n", "`models` is empty")
sub("models-scalar", "models:\n  - name: oracle\n    plugin: dlm-formal\n    model: oracle\n  - name: mdm\n    plugin: dlm-neural\n    model: mdm\n    train: {steps: 10, batch_size: 4}\n    samplers: [ddpm_cache]\n", "models: ⟨oracle\n", "`models` must be a list")
sub("model-scalar-entry", "  - name: oracle\n    plugin: dlm-formal\n    model: oracle\n", "  - ⟨oracle\n", "each entry of `models` must be a mapping, e.g. `- {name: oracle, plugin: dlm-formal, model: oracle}`")
sub("model-missing-plugin", "  - name: oracle\n    plugin: dlm-formal\n", "  - ⟨name: oracle\n", "this `models` entry has no `plugin` (the plugin: a workspace crate")
sub("model-missing-model", "    model: oracle\n", "", "has no `model`")
mark_at("  - name: oracle", "  - ⟨name: oracle")
sub("model-unknown-key", "    model: oracle\n", "    model: oracle\n    ⟨sampler: [ddpm_cache]\n", "did you mean `samplers`?")
sub("model-config-scalar", "    model: oracle\n", "    model: oracle\n    config: ⟨fast\n", "`config` must be a mapping of settings")
sub("model-samplers-scalar", "    samplers: [ddpm_cache]", "    samplers: ⟨ddpm_cache", "`samplers` must be a list")
sub("model-samplers-empty", "    samplers: [ddpm_cache]", "    samplers: ⟨[]", "`samplers` is empty")
sub("model-samplers-duplicate", "    samplers: [ddpm_cache]", "    samplers: [ddpm_cache, ⟨ddpm_cache]", "`samplers` names `ddpm_cache` twice")
sub("model-samplers-unknown", "    samplers: [ddpm_cache]", "    samplers: [⟨ddpm_cach]", "did you mean `ddpm_cache`?")
sub("model-samplers-mapping-item", "    samplers: [ddpm_cache]", "    samplers: [⟨{sampler: ddpm_cache}]", "`samplers` must be a non-empty name")
sub("model-tasks-scalar", "    samplers: [ddpm_cache]", "    samplers: [ddpm_cache]\n    tasks: ⟨bigram", "`tasks` must be a list")
sub("model-tasks-duplicate", "    samplers: [ddpm_cache]", "    samplers: [ddpm_cache]\n    tasks: [bigram, ⟨bigram]", "`tasks` names `bigram` twice")
sub("model-tasks-unknown", "    samplers: [ddpm_cache]", "    samplers: [ddpm_cache]\n    tasks: [⟨bigrm]", "did you mean `bigram`?")
sub("model-reserved-name", "  - name: oracle", "  - name: ⟨reference", "duplicate or reserved model name `reference`")
sub("model-duplicate-name", "  - name: mdm", "  - name: ⟨oracle", "duplicate or reserved model name `oracle`")
sub("model-name-number-list", "  - name: oracle", "  - name: ⟨[1, 2]", "`name` must be a non-empty name")

# --- train ----------------------------------------------------------------------------------
T = "train: {steps: 10, batch_size: 4}"
sub("train-scalar", T, "train: ⟨yes", "`train` must be a mapping")
sub("train-list", T, "train: ⟨[10, 4]", "`train` must be a mapping")
sub("train-missing-steps", T, "train: ⟨{batch_size: 4}", "`train` needs `steps`")
sub("train-missing-batch", T, "train: ⟨{steps: 10}", "`train` needs `batch_size`")
sub("train-steps-zero", T, "train: {steps: ⟨0, batch_size: 4}", "train.steps must be at least 1")
sub("train-steps-word", T, "train: {steps: ⟨many, batch_size: 4}", "train.steps must be a whole number")
sub("train-steps-huge", T, "train: {steps: ⟨1000000000000, batch_size: 4}", "train.steps must be at most 100000000")
sub("train-steps-exponent", T, "train: {steps: ⟨1e4, batch_size: 4}", "write `1e4` out in digits")
sub("train-batch-zero", T, "train: {steps: 10, batch_size: ⟨0}", "train.batch_size must be at least 1")
sub("train-batch-huge", T, "train: {steps: 10, batch_size: ⟨10000000}", "train.batch_size must be at most 1000000")
sub("train-batch-tokens", T, "train: {steps: 10, batch_size: ⟨1000000}", "train.batch_size × length = 1000000 × 64")
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("lengths: [8]", "lengths: [64]"))
sub("train-timeout-1e300", T, "train: {steps: 10, batch_size: 4, timeout_seconds: ⟨1e300}", "train.timeout_seconds must be at most 604800")
sub("train-timeout-zero", T, "train: {steps: 10, batch_size: 4, timeout_seconds: ⟨0}", "train.timeout_seconds must be positive")
sub("train-timeout-word", T, "train: {steps: 10, batch_size: 4, timeout_seconds: ⟨long}", "train.timeout_seconds must be a number of seconds")
sub("train-every-zero", T, "train: {steps: 10, batch_size: 4, validation_every: ⟨0}", "train.validation_every must be at least 1")
sub("train-validation-zero", T, "train: {steps: 10, batch_size: 4, validation_samples: ⟨0}", "train.validation_samples must be at least 1")
sub("train-validation-huge", T, "train: {steps: 10, batch_size: 4, validation_samples: ⟨100000000}", "train.validation_samples must be at most 10000000")
sub("train-validation-tokens", T, "train: {steps: 10, batch_size: 4, validation_samples: ⟨10000000}", "train.validation_samples × length = 10000000 × 64")
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("lengths: [8]", "lengths: [64]"))
sub("train-seed-negative", T, "train: {steps: 10, batch_size: 4, seed: ⟨-1}", "train.seed must be at least 0")
sub("train-seed-word", T, "train: {steps: 10, batch_size: 4, seed: ⟨random}", "train.seed must be a whole number")
sub("train-options-infinite", T, "train: {steps: 10, batch_size: 4, lr: ⟨1e999}", "`1e999` is not a finite number")

# --- samplers -------------------------------------------------------------------------------
S = "  - sampler: ddpm_cache\n    steps: [1, 2]\n"
sub("samplers-scalar", "samplers:\n" + S + "  - sampler: left_to_right\n", "samplers: ⟨ddpm_cache\n", "`samplers` must be a list")
sub("samplers-empty", "samplers:\n" + S + "  - sampler: left_to_right\n", "samplers: ⟨[]\n", "`samplers` is empty")
sub("sampler-scalar-entry", "  - sampler: left_to_right\n", "  - ⟨left_to_right\n", "each entry of `samplers` must be a mapping")
sub("sampler-missing-name", S, "  - ⟨steps: [1, 2]\n", "has no `sampler`")
sub("sampler-unknown-key", "    steps: [1, 2]\n", "    ⟨step: [1, 2]\n", "unknown key `step` in this `samplers` entry; did you mean `steps`?")
sub("steps-scalar", "steps: [1, 2]", "steps: ⟨4", "`steps` must be a list, e.g. `steps: [1, 4, 16]`")
sub("steps-empty", "steps: [1, 2]", "steps: ⟨[]", "`steps` is empty")
sub("steps-zero", "steps: [1, 2]", "steps: [1, ⟨0]", "steps must be at least 1, got 0")
sub("steps-duplicate", "steps: [1, 2]", "steps: [1, 2, 4, ⟨2]", "`steps` lists 2 twice")
sub("steps-word", "steps: [1, 2]", "steps: [⟨one]", "steps must be a whole number")
sub("steps-fraction", "steps: [1, 2]", "steps: [⟨1.5]", "steps must be a whole number")
sub("steps-huge", "steps: [1, 2]", "steps: [⟨2000000]", "steps must be at most 1000000")
sub("steps-mapping", "steps: [1, 2]", "steps: ⟨{a: 1}", "`steps` must be a list")
# Whether a sampler takes `steps` is the plugin's to say (its descriptor), so a suite with
# `steps` on left_to_right, or none on ddpm_cache, parses; tests/suite_errors.rs checks those
# through the CLI, where plugins are described.
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("  - sampler: ddpm_cache", "  - sampler: ⟨ddpm_cache"))
sub("params-scalar", "    steps: [1, 2]\n", "    steps: [1, 2]\n    params: ⟨3\n", "`params` must be a mapping")
sub("params-list", "    steps: [1, 2]\n", "    steps: [1, 2]\n    params: ⟨[block_length, 4]\n", "`params` must be a mapping")
sub("schedule-list", "    steps: [1, 2]\n", "    steps: [1, 2]\n    schedule: ⟨[linear]\n", "`schedule` must be a non-empty name")
sub("sampler-repeated-entry", "  - sampler: left_to_right\n", "  - sampler: ddpm_cache\n    steps: [4, ⟨2]\n  - sampler: left_to_right\n", "sampler `ddpm_cache` with 2 steps is already listed at line 25:16")
sub("sampler-repeated-l2r", "  - sampler: left_to_right\n", "  - sampler: left_to_right\n  - sampler: ⟨left_to_right\n", "sampler `left_to_right` is already listed")

# --- sizes ----------------------------------------------------------------------------------
sub("cell-tokens", "samples: 4", "samples: ⟨10000000", "samples × length = 10000000 × 64 = 640000000 tokens in one cell")
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("lengths: [8]", "lengths: [64]"))
sub("cell-tokens-long", "samples: 4", "samples: ⟨1000", "samples × length = 1000 × 1000000")
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("lengths: [8]", "lengths: [8, 1000000]").replace("batch_size: 2\n", "batch_size: 1\n"))
sub("batch-tokens", "batch_size: 2", "batch_size: ⟨100000", "batch_size × length = 4000 × 8192")
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("samples: 4", "samples: 4000").replace("lengths: [8]", "lengths: [8192]").replace("train: {steps: 10, batch_size: 4}", "train: {steps: 10, batch_size: 4, validation_samples: 1}"))
sub("too-many-cells", "seeds: [0]", "seeds: ⟨[" + ", ".join(str(i) for i in range(2000)) + "]", "cells")
CASES[-1] = (CASES[-1][0], CASES[-1][1], CASES[-1][2].replace("steps: [1, 2]", "steps: [" + ", ".join(str(i) for i in range(1, 600)) + "]"))

# --- YAML itself ----------------------------------------------------------------------------
sub("syntax-unclosed-list", "lengths: [8]", "lengths: [8", "invalid YAML")
sub("syntax-tab-indent", "    task: ngram", "\ttask: ngram", "invalid YAML")
sub("duplicate-key", "samples: 4", "samples: 4\n⟨samples: 5", "duplicate key `samples`")
sub("duplicate-key-nested", "    task: ngram", "    task: ngram\n    ⟨task: hmm", "duplicate key `task`")
sub("anchor", "  - name: oracle", "  - name: &o ⟨oracle", "anchors and aliases are not supported")
sub("tag", "samples: 4", "samples: !!int ⟨4", "tags are not supported")
sub("top-level-list", BASE, "⟨- name: s\n- samples: 4\n", "the top level must be a mapping")
sub("top-level-scalar", BASE, "⟨just a sentence\n", "the top level must be a mapping")
sub("unknown-top-key", "samples: 4", "⟨sample: 4", "unknown key `sample` in the suite; did you mean `samples`?")
sub("unknown-top-key-far", "samples: 4", "samples: 4\n⟨colour: blue", "unknown key `colour` in the suite; known:")
sub("top-key-typo-models", "models:", "⟨modles:", "did you mean `models`?")
sub("missing-name", "name: s\n", "", "the suite has no `name`")
mark_start()
sub("missing-tasks", "tasks:\n" + TASK, "", "the suite has no `tasks`")
mark_start()
sub("bom-inside-key", "samples: 4", "⟨\ufeffsamples: 4", "invisible character such as a byte-order mark; delete it to get `samples`")
sub("zero-width-space-key", "  - sampler: left_to_right", "  - ⟨sampler\u200b: left_to_right", "invisible character")
sub("bom-then-error", "samples: 4", "samples: ⟨four", "samples must be a whole number")
sub("deep-flow-nesting", "config: {order: 2}", "config: {order: 2, x: " + "[" * 61 + "⟨[" + "[" * 38 + "]" * 100 + "}", "nested more than 64 levels")
sub("deep-block-nesting", "    config: {order: 2}\n", "    config:\n      x:\n        " + "- " * 61 + "⟨- " + "- " * 30 + "1\n", "nested more than 64 levels")
sub("very-deep-block-nesting", "    config: {order: 2}\n", "    config:\n      x:\n        " + "- " * 124 + "⟨- " + "- " * 4875 + "1\n", "nested too deeply here")
sub("deep-indentation", "    config: {order: 2}\n", "    config:\n" + "".join(" " * (6 + i) + f"k{i}:\n" for i in range(250)) + " " * 256 + "⟨ v: 1\n", "nested too deeply here")
sub("mapping-key-list", "samples: 4", "⟨[samples]: 4", "mapping keys must be plain strings")
sub("numeric-key", "samples: 4", "⟨4: samples", "unknown key `4` in the suite")
sub("two-documents", BASE, BASE + "⟨---\nname: t\n", "a suite is one YAML document")
sub("random-bytes", "seeds: [0]", "seeds: [0]\n%$#@!*&^:{][}", "invalid YAML")
sub("control-char", "samples: 4", "samples: ⟨4\x07", "samples must be a whole number")
sub("lone-colon", "samples: 4", "⟨:", "")
CASES.pop()
case("empty-file", "the suite is empty", "⟨")
case("only-comments", "the suite is empty", "# nothing here\n⟨")
case("garbage-line", "the top level must be a mapping", "⟨<html><body>not yaml</body></html>\n")


def locate(text):
    """Remove the mark; return the text and `line:col` of the mark (1-based, in characters)."""
    if MARK not in text:
        return text, None
    i = text.index(MARK)
    before = text[:i]
    line = before.count("\n") + 1
    col = len(before) - (before.rfind("\n") + 1) + 1
    return text.replace(MARK, "", 1), (line, col)


def main():
    for old in HERE.glob("*.yaml"):
        old.unlink()
    names = set()
    for name, expect, text in CASES:
        assert name not in names, name
        names.add(name)
        assert "\n" not in expect
        body, at = locate(text)
        header_lines = 2
        if at is not None:
            at_text = f"{at[0] + header_lines}:{at[1]}"
        elif "invalid YAML" in expect:
            at_text = "any"  # located, where the YAML scanner notices
        else:
            raise SystemExit(f"{name}: give a location mark")
        header = f"# expect: {expect}\n# at: {at_text}\n"
        data = header + body
        if name == "bom-then-error":
            data = "\ufeff" + data
        (HERE / f"{name}.yaml").write_text(data, encoding="utf-8")
    (HERE / "invalid-utf8.yaml").write_bytes(
        b"# expect: not UTF-8 text\n# at: 4:10\n" + BASE.encode().replace(b"samples: 4", b"samples: \xff\xfe4")
    )
    print(f"{len(CASES) + 1} files")


main()
