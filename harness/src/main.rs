//! `dlm-bench`: run suites of masked-diffusion and autoregressive language models against
//! ground-truth tasks, and report speed against accuracy.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use dlm_bench::filter::RunFilters;
use dlm_bench::plugins;
use dlm_bench::results::RunDir;
use dlm_bench::run::{run, RunOptions};
use dlm_bench::{compare, export, history, report, training, worker};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code when the run finished but some cells failed.
const EXIT_CELLS_FAILED: u8 = 3;
/// Exit code for a malformed command line (unknown command or option, missing argument).
const EXIT_COMMAND_LINE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "dlm-bench",
    version,
    about = "Benchmark masked diffusion language models against autoregressive ones on ground-truth tasks"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a suite: build its plugins, run every cell in a worker process, write the run directory.
    Run(RunArgs),
    /// The suite's work units (content-hashed cells) with estimated cost and, with --shards, the
    /// shard each goes to under `run --shard K/N`.
    Plan(PlanArgs),
    /// Merge shard run directories (of one suite, commit and plugin versions) into one run
    /// directory: every unit exactly once, then the summary and report.
    Merge(MergeArgs),
    /// The nightly job: run the suite into RUNS_DIR, compare with the suite's previous run
    /// there (compare.html next to the new run), refresh RUNS_DIR/history.html. Exits 4 on a
    /// regression, 3 when cells failed.
    Nightly(NightlyArgs),
    /// Write Slurm job scripts for a suite: an array over shards (each `run --shard`), an
    /// optional training job first, and a merge job after; `--submit` submits them with sbatch.
    Slurm(SlurmArgs),
    /// Train every model of a suite that has `train:` (or find it in the checkpoint cache),
    /// without sampling; prints validation NLL against each task's exact optimum.
    Train(TrainArgs),
    /// List the plugin crates of the workspace (built on demand) and their descriptors.
    List(ListArgs),
    /// Show a plugin's descriptor: a workspace crate name or a library path.
    Describe(DescribeArgs),
    /// Recompute summary.json, report.json and report.html of a run directory from its samples.
    Report {
        /// The run directory (written by `run`, `merge` or `nightly`).
        run_dir: PathBuf,
    },
    /// A finished run's results as a CSV or Markdown table: one row per cell (task, model,
    /// sampler, steps, length, seed, samples, status) with every metric and its 95% CI.
    Export(ExportArgs),
    /// Compare two runs cell by cell: deltas with 95% CIs (paired per sample where the seeds
    /// match) and a status per metric. Exits with 4 when anything regressed.
    Compare(CompareArgs),
    /// One page with every cell's headline metrics over the runs found in a directory.
    History(HistoryArgs),
    /// Internal: run one job in a worker process.
    #[command(hide = true)]
    Worker {
        /// The job file the parent wrote.
        #[arg(long)]
        job: PathBuf,
        /// The events file the worker appends to.
        #[arg(long)]
        events: PathBuf,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Suite YAML file, e.g. suites/quick.yaml.
    suite: PathBuf,
    /// Run directory to create (default: reports/<suite>-<timestamp>).
    #[arg(long, conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Folder of prebuilt plugin libraries, searched before the binary's own folder and
    /// before building with cargo (default: $DLM_BENCH_PLUGIN_DIR).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
    /// Continue a killed or partly failed run in this directory; finished cells are kept.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Cargo profile for building plugin crates (default: release, or $DLM_BENCH_PLUGIN_PROFILE).
    #[arg(long)]
    plugin_profile: Option<String>,
    /// Checkpoint cache for models with `train:` (default: $DLM_BENCH_CHECKPOINTS or
    /// reports/checkpoints).
    #[arg(long)]
    checkpoints: Option<PathBuf>,
    /// Cells run at once, each in its own worker process (default: $DLM_BENCH_JOBS, else the
    /// number of cores, or 1 when a plugin runs on a GPU). Results are the same for any value; timings share the
    /// cores, so measure speed with --jobs 1.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Run only shard K (0-based) of N: a stable, cost-balanced subset of the cells (see
    /// `plan`). Inside a Slurm job array the array task id and count are used when this is not
    /// given.
    #[arg(long)]
    shard: Option<dlm_bench::shard::Shard>,
    /// Run only these suite tasks (comma-separated names). Recorded in the manifest.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tasks: Vec<String>,
    /// Run only these suite models (comma-separated names; `reference` selects the ground-truth
    /// rows, which are otherwise left out when this is given). Recorded in the manifest.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    models: Vec<String>,
    /// At most N samples per cell (text tasks: the first N prompts when N ≤ their count).
    /// Changes the cells' identity and is recorded in the manifest.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
}

#[derive(Args)]
struct ExportArgs {
    /// The finished run directory (its summary.json).
    run_dir: PathBuf,
    /// Write CSV: figures as summary.json has them, an empty field where a cell has none.
    #[arg(
        long,
        conflicts_with = "markdown",
        required_unless_present = "markdown"
    )]
    csv: bool,
    /// Write a Markdown table: figures rounded, CIs as `value [low, high]`.
    #[arg(long)]
    markdown: bool,
    /// Write to this file instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct PlanArgs {
    /// Suite YAML file.
    suite: PathBuf,
    /// Split into this many shards and show each unit's shard and each shard's cost.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    shards: Option<u64>,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    /// Folder of prebuilt plugin libraries, searched before the binary's own folder and
    /// before building with cargo (default: $DLM_BENCH_PLUGIN_DIR).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
}

#[derive(Args)]
struct NightlyArgs {
    /// Suite YAML file.
    suite: PathBuf,
    /// Where the nightly runs live (one run directory per night).
    runs_dir: PathBuf,
    /// As for `run`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// As for `run`.
    #[arg(long)]
    checkpoints: Option<PathBuf>,
    /// As for `run`.
    #[arg(long)]
    plugin_profile: Option<String>,
    /// As for `run`.
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
}

#[derive(Args)]
struct SlurmArgs {
    /// Suite YAML file.
    suite: PathBuf,
    /// Where the scripts, shard runs, logs and the merged run go.
    #[arg(long)]
    out: PathBuf,
    /// Array tasks (shards).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    shards: u64,
    /// Slurm partition (`--partition`); the cluster's default when not given.
    #[arg(long)]
    partition: Option<String>,
    /// Time limit per array task (`--time`), e.g. 04:00:00.
    #[arg(long)]
    time: Option<String>,
    /// GPUs per array task (`--gpus-per-task`); none when not given.
    #[arg(long)]
    gpus_per_task: Option<u32>,
    /// Memory per task (`--mem`), e.g. 32G.
    #[arg(long)]
    mem: Option<String>,
    /// Slurm account to charge (`--account`).
    #[arg(long)]
    account: Option<String>,
    /// Train the suite's models in a job of their own before the array.
    #[arg(long)]
    train_first: bool,
    /// Submit the jobs (sbatch) after writing them.
    #[arg(long)]
    submit: bool,
}

#[derive(Args)]
struct MergeArgs {
    /// The run directory to create.
    out: PathBuf,
    /// The shards' run directories.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Merge what exists and list the missing units instead of refusing.
    #[arg(long)]
    allow_partial: bool,
}

#[derive(Args)]
struct TrainArgs {
    /// Suite YAML file.
    suite: PathBuf,
    /// Cargo profile for building plugin crates (default: release, or $DLM_BENCH_PLUGIN_PROFILE).
    #[arg(long)]
    plugin_profile: Option<String>,
    /// Checkpoint cache (default: $DLM_BENCH_CHECKPOINTS or reports/checkpoints).
    #[arg(long)]
    checkpoints: Option<PathBuf>,
    /// Folder of prebuilt plugin libraries, searched before the binary's own folder and
    /// before building with cargo (default: $DLM_BENCH_PLUGIN_DIR).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
}

#[derive(Args)]
struct ListArgs {
    /// Also describe these plugin libraries.
    libraries: Vec<PathBuf>,
    /// Cargo profile for building plugin crates (default: release, or $DLM_BENCH_PLUGIN_PROFILE).
    #[arg(long)]
    plugin_profile: Option<String>,
    /// Also list the test-fixture plugins (crates marked `fixture = true` under
    /// `[package.metadata.dlm-bench]`), which misbehave on purpose.
    #[arg(long)]
    all: bool,
    /// Folder of prebuilt plugin libraries, searched before the binary's own folder and
    /// before building with cargo (default: $DLM_BENCH_PLUGIN_DIR).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
}

#[derive(Args)]
struct DescribeArgs {
    /// A workspace plugin crate name (e.g. dlm-formal) or the path of a built plugin library.
    plugin: String,
    /// Cargo profile for building a plugin crate (default: release, or $DLM_BENCH_PLUGIN_PROFILE).
    #[arg(long)]
    plugin_profile: Option<String>,
    /// Folder of prebuilt plugin libraries, searched before the binary's own folder and
    /// before building with cargo (default: $DLM_BENCH_PLUGIN_DIR).
    #[arg(long, value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
}

#[derive(Args)]
struct CompareArgs {
    /// The baseline run directory.
    base: PathBuf,
    /// The candidate run directory.
    new: PathBuf,
    /// Write an HTML report here (and its JSON twin next to it, same name with .json).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Write the comparison as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the new run's figures in Bencher Metric Format here.
    #[arg(long)]
    bmf: Option<PathBuf>,
    /// Keep only rows whose status is a change (not "within noise" or "identical").
    #[arg(long)]
    only_changed: bool,
    /// Relative noise floor for timings (default 0.10 = ±10%).
    #[arg(long, default_value_t = dlm_bench::compare::DEFAULT_TIMING_NOISE)]
    timing_noise: f64,
}

#[derive(Args)]
struct HistoryArgs {
    /// Directory holding run directories (searched three levels deep).
    runs_dir: PathBuf,
    /// Where to write the page (default RUNS_DIR/history.html); the JSON twin goes next to it.
    #[arg(long)]
    html: Option<PathBuf>,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DLM_BENCH_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        // Log lines lift the progress bars while they print; no colour codes in a log file.
        .with_writer(dlm_bench::progress::LogWriter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return command_line_error(&e),
    };
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Print clap's message (help and version to stdout, errors to stderr) and choose the exit
/// code: 0 for help and version, 1 for a bad value given to an option or argument (bad input,
/// like any other), 2 for a malformed command line (unknown command or option, missing
/// argument), as docs/reference.md lists them.
fn command_line_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind as K;
    let _ = e.print();
    match e.kind() {
        K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
            if !e.use_stderr() =>
        {
            ExitCode::SUCCESS
        }
        K::InvalidValue | K::ValueValidation | K::InvalidUtf8 => ExitCode::FAILURE,
        _ => ExitCode::from(EXIT_COMMAND_LINE),
    }
}

fn dispatch(cmd: Cmd) -> Result<ExitCode> {
    match cmd {
        Cmd::Run(args) => cmd_run(args),
        Cmd::Train(args) => cmd_train(args),
        Cmd::List(args) => cmd_list(args),
        Cmd::Describe(args) => cmd_describe(args),
        Cmd::Report { run_dir } => cmd_report(&run_dir),
        Cmd::Export(args) => cmd_export(args),
        Cmd::Compare(args) => cmd_compare(args),
        Cmd::History(args) => cmd_history(args),
        Cmd::Plan(args) => cmd_plan(args),
        Cmd::Merge(args) => cmd_merge(args),
        Cmd::Nightly(args) => cmd_nightly(args),
        Cmd::Slurm(args) => cmd_slurm(args),
        Cmd::Worker { job, events } => {
            let code = worker::worker_main(&job, &events)?;
            Ok(ExitCode::from(code as u8))
        }
    }
}

/// `run`: the suite end to end; exit 3 when some cell failed.
fn cmd_run(args: RunArgs) -> Result<ExitCode> {
    let RunArgs {
        suite,
        out,
        resume,
        plugin_profile,
        plugin_dir,
        checkpoints,
        jobs,
        shard,
        tasks,
        models,
        limit,
    } = args;

    let filters = RunFilters {
        tasks,
        models,
        limit: limit.map(|l| l as usize),
    };
    let outcome = run(&RunOptions {
        jobs: jobs.map(|j| j as usize),
        shard,
        filters: filters.clone(),
        suite,
        out,
        resume,
        plugin_profile: plugin_profile.unwrap_or_else(plugins::default_profile),
        plugin_dir,
        checkpoints: checkpoints.unwrap_or_else(training::default_cache_dir),
    })?;
    // The results in the terminal, as lm-eval prints them (stdout: the run's output).
    print!("{}", dlm_bench::terminal_table::render(&outcome.summary));
    println!(
        "run directory: {}\n  {} cells ran, {} failed; report: {}",
        outcome.dir.display(),
        outcome.ok,
        outcome.failed,
        outcome.dir.join("report.html").display()
    );
    if !filters.is_empty() {
        println!(
            "  filtered run ({}): part of the suite only, recorded in manifest.json",
            filters.describe()
        );
    }
    if outcome.failed > 0 {
        eprintln!(
            "some cells failed; see the report's \"Failed cells\" section and the cell logs in {}/work/",
            outcome.dir.display()
        );
        return Ok(ExitCode::from(EXIT_CELLS_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `train`: the suite's trainings only (or their cached checkpoints).
fn cmd_train(args: TrainArgs) -> Result<ExitCode> {
    let TrainArgs {
        suite,
        plugin_profile,
        checkpoints,
        plugin_dir,
    } = args;

    let results = dlm_bench::run::train_only(
        &suite,
        &plugins::PluginSearch::new(plugin_profile, plugin_dir),
        &checkpoints.unwrap_or_else(training::default_cache_dir),
    )?;
    let mut failed = 0;
    for (key, r) in &results {
        match r {
            Ok(record) => println!(
                "{}
  checkpoint: {}",
                record.summary_line(),
                record.checkpoint.display()
            ),
            Err(cause) => {
                failed += 1;
                println!("{key}: FAILED: {cause}");
            }
        }
    }
    Ok(if failed > 0 {
        ExitCode::from(EXIT_CELLS_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `list`: the plugins found prebuilt (or the workspace's plugin crates, fixtures only with
/// `--all`) and any libraries named.
fn cmd_list(args: ListArgs) -> Result<ExitCode> {
    let ListArgs {
        libraries,
        plugin_profile,
        all,
        plugin_dir,
    } = args;

    let search = plugins::PluginSearch::new(plugin_profile, plugin_dir);
    plugins::list(&search, &libraries, all)?;
    Ok(ExitCode::SUCCESS)
}

/// `describe`: one plugin's descriptor.
fn cmd_describe(args: DescribeArgs) -> Result<ExitCode> {
    let DescribeArgs {
        plugin,
        plugin_profile,
        plugin_dir,
    } = args;

    let search = plugins::PluginSearch::new(plugin_profile, plugin_dir);
    plugins::describe_named(&plugin, &search)?;
    Ok(ExitCode::SUCCESS)
}

/// `report`: recompute a run directory's summary and report.
fn cmd_report(run_dir: &std::path::Path) -> Result<ExitCode> {
    let dir = RunDir::open(run_dir)?;
    let summary = report::write_all(&dir, None).context("cannot write the report")?;
    print!("{}", dlm_bench::terminal_table::render(&summary));
    println!(
        "{} cells summarised; report: {} (twins: summary.json, report.json)",
        summary.len(),
        dir.file("report.html").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `export`: a finished run's summary as CSV or Markdown.
fn cmd_export(args: ExportArgs) -> Result<ExitCode> {
    let rows = export::load(&args.run_dir)?;
    let format = if args.markdown {
        export::Format::Markdown
    } else {
        export::Format::Csv
    };
    let mut table = export::render(&rows, format);
    if format == export::Format::Markdown {
        // A partial run says so above its table (CSV stays a plain table: the manifest has it).
        if let Some(note) = export::filtered_note(&args.run_dir)? {
            table = format!("{note}\n\n{table}");
        }
    }
    match &args.out {
        Some(path) => {
            std::fs::write(path, table)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("{} cells written to {}", rows.len(), path.display());
        }
        None => print!("{table}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `compare`: two runs cell by cell; exit 4 on a regression.
fn cmd_compare(args: CompareArgs) -> Result<ExitCode> {
    let CompareArgs {
        base,
        new,
        html,
        json,
        bmf,
        only_changed,
        timing_noise,
    } = args;

    if !(timing_noise.is_finite() && timing_noise >= 0.0) {
        anyhow::bail!("--timing-noise must be a non-negative number, got {timing_noise}");
    }
    let c = compare::run_compare(
        &base,
        &new,
        &compare::Options {
            timing_noise,
            only_changed,
        },
        html.as_deref(),
        json.as_deref(),
        bmf.as_deref(),
    )?;
    print!("{}", c.text());
    if let Some(h) = &html {
        println!("comparison: {}", h.display());
    }
    Ok(ExitCode::from(c.exit_code()))
}

/// `history`: one page over every run in a directory.
fn cmd_history(args: HistoryArgs) -> Result<ExitCode> {
    let HistoryArgs { runs_dir, html } = args;

    let (h, path) = history::run_history(&runs_dir, html.as_deref())?;
    println!(
        "{} runs, {} changes; history: {} (JSON twin next to it)",
        h.runs.len(),
        h.changes.len(),
        path.display()
    );
    for s in &h.skipped {
        eprintln!("skipped {s}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `plan`: the suite's work units, their cost and (with `--shards`) their shards.
fn cmd_plan(args: PlanArgs) -> Result<ExitCode> {
    let suite = dlm_bench::suite::Suite::load(&args.suite)?;
    // The checks `run` makes before any cell (components, samplers, config keys, lengths),
    // against the plugins as `run` would find or build them.
    match plugins::missing_path_library(&suite) {
        None => {
            let search = plugins::PluginSearch::new(None, args.plugin_dir.clone());
            dlm_bench::run::prepare(&args.suite, &search)?;
        }
        Some(missing) => eprintln!(
            "note: plugin library {} does not exist yet, so the suite was not checked against its plugins (`run` will)",
            missing.display()
        ),
    }
    let cells = suite.work_cells();
    let units = dlm_bench::shard::units(&cells);
    let shards = args.shards.map(|n| n as usize);
    let assigned = shards.map(|n| dlm_bench::shard::assign(&units, n));
    if args.json {
        let rows: Vec<serde_json::Value> = units
            .iter()
            .enumerate()
            .map(|(i, u)| {
                serde_json::json!({
                    "unit": u.id, "key": u.key, "cost": u.cost,
                    "shard": assigned.as_ref().map(|a| a[i]),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (i, u) in units.iter().enumerate() {
        match &assigned {
            Some(a) => println!(
                "{}  shard {:>3}  cost {:>12.0}  {}",
                u.id, a[i], u.cost, u.key
            ),
            None => println!("{}  cost {:>12.0}  {}", u.id, u.cost, u.key),
        }
    }
    let total: f64 = units.iter().map(|u| u.cost).sum();
    println!("{} units, total cost {total:.0}", units.len());
    if let (Some(n), Some(a)) = (shards, &assigned) {
        let mut loads = vec![0.0; n];
        for (u, &s) in units.iter().zip(a) {
            loads[s] += u.cost;
        }
        for (s, l) in loads.iter().enumerate() {
            println!(
                "shard {s}/{n}: cost {l:.0} ({:.1}%)",
                100.0 * l / total.max(1.0)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `merge`: shard run directories into one.
fn cmd_merge(args: MergeArgs) -> Result<ExitCode> {
    let merged = dlm_bench::shard::merge(&args.out, &args.shards, args.allow_partial)?;
    println!(
        "merged {} cells from {} shards into {}; report: {}",
        merged.cells,
        args.shards.len(),
        merged.dir.display(),
        merged.dir.join("report.html").display()
    );
    if !merged.missing.is_empty() {
        eprintln!(
            "{} unit(s) missing (--allow-partial): {}",
            merged.missing.len(),
            merged.missing.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `nightly`: run, compare with the previous run of the same suite, refresh the history.
fn cmd_nightly(args: NightlyArgs) -> Result<ExitCode> {
    let suite = dlm_bench::suite::Suite::load(&args.suite)?;
    std::fs::create_dir_all(&args.runs_dir)
        .with_context(|| format!("cannot create {}", args.runs_dir.display()))?;
    let previous = dlm_bench::nightly::latest_run(&args.runs_dir, &suite.name)?;
    let stamp = time::OffsetDateTime::now_utc()
        .format(&time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .unwrap_or_default();
    let out = args.runs_dir.join(format!("{}-{stamp}", suite.name));
    let outcome = run(&RunOptions {
        suite: args.suite.clone(),
        out: Some(out.clone()),
        resume: None,
        plugin_profile: args.plugin_profile.unwrap_or_else(plugins::default_profile),
        plugin_dir: args.plugin_dir,
        checkpoints: args.checkpoints.unwrap_or_else(training::default_cache_dir),
        jobs: args.jobs.map(|j| j as usize),
        shard: None,
        filters: RunFilters::default(),
    })?;
    println!(
        "run directory: {}\n  {} cells ran, {} failed",
        outcome.dir.display(),
        outcome.ok,
        outcome.failed
    );
    let mut code = if outcome.failed > 0 {
        EXIT_CELLS_FAILED
    } else {
        0
    };
    match previous {
        Some(base) => {
            let html = out.join("compare.html");
            let c = compare::run_compare(
                &base,
                &out,
                &compare::Options {
                    timing_noise: compare::DEFAULT_TIMING_NOISE,
                    only_changed: false,
                },
                Some(&html),
                None,
                None,
            )?;
            print!("{}", c.text());
            println!("comparison with {}: {}", base.display(), html.display());
            if c.exit_code() != 0 {
                code = c.exit_code();
            }
        }
        None => println!(
            "no earlier run of `{}` in {}: nothing to compare",
            suite.name,
            args.runs_dir.display()
        ),
    }
    let (h, path) = history::run_history(&args.runs_dir, None)?;
    println!("history: {} ({} runs)", path.display(), h.runs.len());
    Ok(ExitCode::from(code))
}

/// `slurm`: the job scripts (and, with `--submit`, their submission).
fn cmd_slurm(args: SlurmArgs) -> Result<ExitCode> {
    // Validate the suite now rather than on the cluster.
    dlm_bench::suite::Suite::load(&args.suite)?;
    let absolute = |p: &std::path::Path| -> Result<PathBuf> {
        Ok(if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()?.join(p)
        })
    };
    let out = absolute(&args.out)?;
    let options = dlm_bench::slurm::SlurmOptions {
        suite: absolute(&args.suite)?,
        out: out.clone(),
        shards: args.shards as usize,
        partition: args.partition,
        time: args.time,
        gpus_per_task: args.gpus_per_task,
        memory: args.mem,
        account: args.account,
        train_first: args.train_first,
        exe: std::env::current_exe().context("cannot find the dlm-bench executable")?,
        workdir: std::env::current_dir()?,
    };
    let scripts = dlm_bench::slurm::scripts(&options);
    std::fs::create_dir_all(out.join("logs"))?;
    let mut files = vec![
        ("shards.sbatch", scripts.array),
        ("merge.sbatch", scripts.merge),
        ("submit.sh", scripts.submit),
    ];
    if let Some(t) = scripts.train {
        files.push(("train.sbatch", t));
    }
    for (name, text) in &files {
        std::fs::write(out.join(name), text)?;
        println!("wrote {}", out.join(name).display());
    }
    if args.submit {
        let status = std::process::Command::new("bash")
            .arg(out.join("submit.sh"))
            .status()
            .context("cannot run bash to submit (is sbatch on PATH?)")?;
        if !status.success() {
            anyhow::bail!(
                "submitting failed ({status}); the scripts are in {}",
                out.display()
            );
        }
    } else {
        println!("submit with: bash {}", out.join("submit.sh").display());
    }
    Ok(ExitCode::SUCCESS)
}
