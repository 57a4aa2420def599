//! What a run prints without a terminal (cron, nohup, CI: stderr piped, so no bars): one line
//! per finished training and cell with the count, the time elapsed and the time left, a last
//! line with the total; and on stdout the results table, built from the run's own summary.

mod common;
use common::*;

/// The `[ k/N cells | … elapsed | …] key: …` lines of a run's stderr, by `k`.
fn cell_lines(stderr: &str, total: usize) -> Vec<&str> {
    let prefix = |k: usize| format!("[{k:>w$}/{total} cells | ", w = total.to_string().len());
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(" cells | ")).collect();
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&prefix(i + 1)),
            "line {i}: {line}\n{stderr}"
        );
        assert!(line.contains(" elapsed | "), "{line}");
    }
    lines
}

#[test]
fn a_run_without_a_terminal_prints_a_line_per_cell_and_a_results_table() {
    let out = scratch("progress-lines").join("run");
    let r = run(&[
        "run",
        "tests/suites/tiny.yaml",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&r.stdout).into_owned(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
    );
    let summary = summary(&out);
    assert_eq!(summary.len(), 10);

    // One line per cell, counted 1..10, each naming its cell once, with the time left.
    let lines = cell_lines(&stderr, 10);
    assert_eq!(lines.len(), 10, "{stderr}");
    for cell in &summary {
        let key = cell["key"].as_str().unwrap();
        let mine: Vec<_> = lines
            .iter()
            .filter(|l| l.contains(&format!("] {key}: ok (")))
            .collect();
        assert_eq!(mine.len(), 1, "{key}\n{stderr}");
    }
    assert!(lines.iter().all(|l| l.contains(" left] ")), "{stderr}");
    assert!(lines[9].contains("| ~0s left] "), "{stderr}");
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("done: 10 cells in ") && last.ends_with(" total"),
        "{stderr}"
    );
    // No bar drawn into the log.
    assert!(
        !stderr.contains('\r') && !stderr.contains("\x1b["),
        "{stderr:?}"
    );

    // The table: per task, the reference, `ddpm_cache` at its fewest and most of three step
    // counts, and `left_to_right`, with the summary's own figures.
    for task in ["bigram-ter", "bigram-ser"] {
        let title = format!("{task}: 95% CIs in brackets; samplers with more than two step counts: fewest and most steps shown");
        let at = stdout.find(&title).unwrap_or_else(|| panic!("{stdout}"));
        let rows: Vec<&str> = stdout[at..]
            .lines()
            .skip(3)
            .take_while(|l| !l.is_empty())
            .collect();
        let labels: Vec<String> = rows
            .iter()
            .map(|r| r.split_whitespace().take(4).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            labels,
            [
                "reference · ground truth",
                "oracle · ddpm_cache 1",
                "oracle · ddpm_cache 12",
                "oracle · left_to_right 1/token",
            ],
            "{stdout}"
        );
        for (row, steps) in rows.iter().zip([None, Some(1), Some(12), Some(12)]) {
            let sampler = row.split_whitespace().nth(2).filter(|_| steps.is_some());
            let model = row.split_whitespace().next().unwrap();
            let c = cell(&summary, task, model, sampler, steps);
            let ser = c["ser"].as_f64().unwrap();
            assert!(row.contains(&format!("{ser:.3} [")), "{row} vs {c}");
            if let Some(ter) = c["ter"].as_f64() {
                assert!(row.contains(&format!("{ter:.4} [")), "{row} vs {c}");
            }
        }
    }
    // The table comes before the run's closing lines.
    assert!(stdout.find("bigram-ter: ").unwrap() < stdout.find("run directory:").unwrap());
}

#[test]
fn a_training_gets_its_line_before_the_cells_and_a_reused_checkpoint_says_so() {
    let dir = scratch("progress-training");
    let suite = dir.join("train.yaml");
    std::fs::write(
        &suite,
        "name: progress-training\nsamples: 20\nbatch_size: 20\nlengths: [12]\nseeds: [1]\n\
         tasks:\n  - {name: bigram, plugin: dlm-formal, task: ngram, config: {order: 2, variant: ser, seed: 0}}\n\
         models:\n  - name: mdm\n    plugin: dlm-neural\n    model: mdm\n    config: {init: {hidden: 16, layers: 1, heads: 2}}\n\
         \x20   train: {steps: 20, batch_size: 16, lr: 0.003, seed: 5, validation_every: 10, validation_samples: 32}\n\
         samplers:\n  - sampler: ddpm_cache\n    steps: [4]\n",
    )
    .unwrap();
    let checkpoints = dir.join("checkpoints");
    let run_once = |name: &str| {
        let out = dir.join(name);
        let r = command()
            .env("DLM_BENCH_CHECKPOINTS", &checkpoints)
            .args([
                "run",
                suite.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .output()
            .expect("dlm-bench starts");
        assert!(r.status.success(), "{}", text(&r));
        String::from_utf8_lossy(&r.stderr).into_owned()
    };

    let stderr = run_once("first");
    let trained = stderr
        .find("[1/1 trainings | ")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        stderr[trained..].contains("] trained mdm/bigram/L12: 20 steps"),
        "{stderr}"
    );
    assert_eq!(cell_lines(&stderr, 2).len(), 2, "{stderr}");
    assert!(trained < stderr.find("[1/2 cells | ").unwrap(), "{stderr}");
    assert!(
        stderr.contains("\ndone: 2 cells, 1 training in "),
        "{stderr}"
    );

    let stderr = run_once("second");
    assert!(
        stderr.contains("[1/1 trainings | ") && stderr.contains("] reusing checkpoint "),
        "{stderr}"
    );
    assert_eq!(cell_lines(&stderr, 2).len(), 2, "{stderr}");
}
