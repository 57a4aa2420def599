//! Slurm job scripts for a suite: a job array over shards (`run --shard` picks its shard from
//! the array variables), an optional training job the array depends on, and a merge job that
//! depends on the array. dlm-bench never schedules work itself; nothing else knows Slurm.

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// What the scripts ask Slurm for.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// The suite file (as the jobs will see it).
    pub suite: PathBuf,
    /// Where shard runs, logs and the merged run go.
    pub out: PathBuf,
    /// Array tasks (shards).
    pub shards: usize,
    pub partition: Option<String>,
    /// `--time` per array task, e.g. `04:00:00`.
    pub time: Option<String>,
    pub gpus_per_task: Option<u32>,
    /// `--mem`, e.g. `32G`.
    pub memory: Option<String>,
    pub account: Option<String>,
    /// Train the suite's models in a job of its own first (their checkpoints are then shared).
    pub train_first: bool,
    /// The dlm-bench executable the jobs run.
    pub exe: PathBuf,
    /// The checkout the jobs run in (plugin crates are built there).
    pub workdir: PathBuf,
}

/// The three scripts, by file name.
pub struct Scripts {
    pub train: Option<String>,
    pub array: String,
    pub merge: String,
    /// A driver that submits them with their dependencies (`sbatch --parsable`).
    pub submit: String,
}

fn quoted(p: &Path) -> String {
    let s = p.display().to_string();
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The script's start: every `#SBATCH` line (sbatch reads them only before the first command),
/// then strict mode and the working directory.
fn header(
    s: &mut String,
    o: &SlurmOptions,
    name: &str,
    log: &str,
    with_resources: bool,
    extra: &[String],
) {
    let _ = writeln!(s, "#!/bin/bash");
    let _ = writeln!(s, "#SBATCH --job-name={name}");
    for e in extra {
        let _ = writeln!(s, "#SBATCH {e}");
    }
    let _ = writeln!(s, "#SBATCH --output={}/logs/{log}", o.out.display());
    if let Some(p) = &o.partition {
        let _ = writeln!(s, "#SBATCH --partition={p}");
    }
    if let Some(a) = &o.account {
        let _ = writeln!(s, "#SBATCH --account={a}");
    }
    if with_resources {
        if let Some(t) = &o.time {
            let _ = writeln!(s, "#SBATCH --time={t}");
        }
        if let Some(g) = o.gpus_per_task {
            let _ = writeln!(s, "#SBATCH --gpus-per-task={g}");
        }
        if let Some(m) = &o.memory {
            let _ = writeln!(s, "#SBATCH --mem={m}");
        }
    }
    let _ = writeln!(s, "set -euo pipefail");
    let _ = writeln!(s, "cd {}", quoted(&o.workdir));
}

/// The job scripts for a suite.
pub fn scripts(o: &SlurmOptions) -> Scripts {
    let (exe, suite, out) = (quoted(&o.exe), quoted(&o.suite), &o.out);
    let train = o.train_first.then(|| {
        let mut s = String::new();
        header(&mut s, o, "dlm-bench-train", "train-%j.out", true, &[]);
        let _ = writeln!(s, "{exe} train {suite}");
        s
    });
    let mut array = String::new();
    let range = format!("--array=0-{}", o.shards.max(1) - 1);
    header(
        &mut array,
        o,
        "dlm-bench-shards",
        "shard-%A_%a.out",
        true,
        &[range],
    );
    let _ = writeln!(
        array,
        "# run picks shard $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT; a re-run of a killed\n# task resumes its own directory."
    );
    let shard_dir = format!("{}/shard-${{SLURM_ARRAY_TASK_ID}}", out.display());
    let _ = writeln!(
        array,
        "if [ -f \"{shard_dir}/manifest.json\" ]; then\n  {exe} run {suite} --resume \"{shard_dir}\"\nelse\n  {exe} run {suite} --out \"{shard_dir}\"\nfi"
    );
    let mut merge = String::new();
    header(&mut merge, o, "dlm-bench-merge", "merge-%j.out", false, &[]);
    let shards: Vec<String> = (0..o.shards.max(1))
        .map(|k| format!("\"{}/shard-{k}\"", out.display()))
        .collect();
    let _ = writeln!(
        merge,
        "{exe} merge \"{}/merged\" {}",
        out.display(),
        shards.join(" ")
    );
    let mut submit = String::from(
        "#!/bin/bash\n# Submits the jobs with their dependencies.\nset -euo pipefail\n",
    );
    let _ = writeln!(submit, "cd \"$(dirname \"$0\")\"");
    let _ = writeln!(submit, "mkdir -p {}", quoted(&out.join("logs")));
    let dep = if train.is_some() {
        let _ = writeln!(submit, "TRAIN=$(sbatch --parsable train.sbatch)");
        " --dependency=afterok:$TRAIN --kill-on-invalid-dep=yes"
    } else {
        ""
    };
    let _ = writeln!(submit, "ARRAY=$(sbatch --parsable{dep} shards.sbatch)");
    // Submitted at once, before the array ends: Slurm counts an afterok on a purged job as met.
    let _ = writeln!(
        submit,
        "MERGE=$(sbatch --parsable --dependency=afterok:$ARRAY --kill-on-invalid-dep=yes merge.sbatch)"
    );
    let _ = writeln!(submit, "echo \"array $ARRAY, merge $MERGE\"");
    Scripts {
        train,
        array,
        merge,
        submit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> SlurmOptions {
        SlurmOptions {
            suite: "suites/quick.yaml".into(),
            out: "/scratch/run 1".into(),
            shards: 4,
            partition: Some("gpu".into()),
            time: Some("04:00:00".into()),
            gpus_per_task: Some(1),
            memory: Some("32G".into()),
            account: None,
            train_first: true,
            exe: "/opt/dlm-bench".into(),
            workdir: "/srv/it's here".into(),
        }
    }

    #[test]
    fn the_array_covers_every_shard_and_the_merge_waits_for_it() {
        let s = scripts(&options());
        assert!(s.array.contains("#SBATCH --array=0-3"));
        assert!(s.array.contains("#SBATCH --partition=gpu"));
        assert!(s.array.contains("#SBATCH --gpus-per-task=1"));
        assert!(s.array.contains("#SBATCH --mem=32G"));
        assert!(s
            .array
            .contains("--resume \"/scratch/run 1/shard-${SLURM_ARRAY_TASK_ID}\""));
        for k in 0..4 {
            assert!(s.merge.contains(&format!("\"/scratch/run 1/shard-{k}\"")));
        }
        assert!(!s.merge.contains("--gpus"), "the merge needs no GPU");
        assert!(s.submit.contains("--dependency=afterok:$TRAIN"));
        assert!(s.submit.contains("--dependency=afterok:$ARRAY"));
        assert!(s.train.unwrap().contains("train 'suites/quick.yaml'"));
        // Paths are quoted for the shell, quotes included.
        assert!(s.array.contains(r"cd '/srv/it'\''s here'"));
        // sbatch reads #SBATCH lines only before the first command.
        for script in [&s.array, &s.merge] {
            let first_command = script.lines().position(|l| !l.starts_with('#')).unwrap();
            let lines: Vec<&str> = script.lines().collect();
            let last_directive = lines
                .iter()
                .rposition(|l| l.starts_with("#SBATCH"))
                .unwrap();
            assert!(last_directive < first_command, "{script}");
        }
    }
}
