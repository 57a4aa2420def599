//! Running the `likelihood:` section after the cells: plugins are loaded in this process (the
//! calls are few and short), models opened as the cells open them, with the checkpoint the
//! suite's training made for the (model, task, length) cell.

use super::{read_records, LikelihoodRecord, LIKELIHOOD_FILE};
use crate::results::RunDir;
use crate::suite::{resolve_paths, CellSpec, ComponentSpec, LikelihoodSpec, PluginRef, Suite};
use crate::training::{self, TrainRecord};
use anyhow::{anyhow, Context, Result};
use dlm_plugin_api::abi::Instance;
use dlm_plugin_api::protocol::{
    method, ComponentKind, DescribeTaskRequest, DrawScheme, ElboSettings, LoglikelihoodReply,
    LoglikelihoodRequest, ModelOpenConfig, SampleReferenceRequest, TaskBinding, TaskDescription,
    TokenBatch,
};
use dlm_plugin_api::LoadedPlugin;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

type Rows = Vec<(Vec<u32>, Vec<u32>)>;
type Trained = BTreeMap<String, std::result::Result<TrainRecord, String>>;

/// Run the suite's `likelihood:` section (if any) into `dir/likelihood.jsonl`, skipping the
/// measurements an earlier (resumed) run finished. A failed measurement is recorded with its
/// cause and the run goes on. `trained` holds this session's trainings; a resumed run whose
/// cells were all finished trained nothing now, so the run directory's earlier training lines
/// supply the checkpoints.
pub fn run(
    run_dir: &RunDir,
    suite: &Suite,
    cells: &[CellSpec],
    libraries: &BTreeMap<PluginRef, PathBuf>,
    trained: &Trained,
) -> Result<()> {
    let Some(spec) = &suite.likelihood else {
        return Ok(());
    };
    let mut checkpoints: Trained = training::read_training(run_dir)?
        .into_iter()
        .filter_map(|line| Some((line.key, Ok(line.record?))))
        .collect();
    checkpoints.extend(trained.iter().map(|(k, v)| (k.clone(), v.clone())));
    let (trained, dir) = (&checkpoints, run_dir.path.as_path());
    let done: HashSet<_> = read_records(dir)?
        .into_iter()
        .filter(|r| r.error.is_none())
        .map(|r| r.key())
        .collect();
    let path = dir.join(LIKELIHOOD_FILE);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut append = |record: &LikelihoodRecord| -> Result<()> {
        writeln!(file, "{}", serde_json::to_string(record)?)?;
        file.flush()?;
        Ok(())
    };
    let bar = ProgressBar::new((spec.tasks.len() * spec.models.len() * spec.mc_num.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("likelihood {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    for task_name in &spec.tasks {
        let task = match TaskData::of(task_name, spec, cells, libraries) {
            Ok(task) => task,
            Err(e) => {
                for model in &spec.models {
                    append(&failed(task_name, model, spec, None, &e))?;
                }
                bar.inc((spec.models.len() * spec.mc_num.len()) as u64);
                continue;
            }
        };
        for model_name in &spec.models {
            bar.set_message(format!("{task_name} · {model_name}"));
            let opened = open_model(
                task_name, model_name, spec, &task, cells, libraries, trained,
            );
            let (plugin, instance, oracle) = match opened {
                Ok(m) => m,
                Err(e) => {
                    append(&failed(task_name, model_name, spec, None, &e))?;
                    bar.inc(spec.mc_num.len() as u64);
                    continue;
                }
            };
            for &mc_num in &spec.mc_num {
                let key = (task_name.clone(), model_name.clone(), Some(mc_num));
                let exact_key = (task_name.clone(), model_name.clone(), None);
                if done.contains(&key) || done.contains(&exact_key) {
                    bar.inc(1);
                    continue;
                }
                let measured = measure(&instance, &task, spec, mc_num);
                let mut record = match measured {
                    Ok(r) => r,
                    Err(e) => failed(task_name, model_name, spec, Some(mc_num), &e),
                };
                (record.task, record.model, record.oracle) =
                    (task_name.clone(), model_name.clone(), oracle);
                append(&record)?;
                bar.inc(1);
                // An exact answer does not depend on the draws: one measurement is all.
                if record.mc_num.is_none() && record.error.is_none() {
                    bar.inc((spec.mc_num.len() - 1) as u64);
                    break;
                }
            }
            drop(instance);
            drop(plugin);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

fn failed(
    task: &str,
    model: &str,
    spec: &LikelihoodSpec,
    mc_num: Option<usize>,
    e: &anyhow::Error,
) -> LikelihoodRecord {
    tracing::error!("likelihood {task} · {model}: {e:#}");
    LikelihoodRecord {
        task: task.into(),
        model: model.into(),
        mc_num,
        method: String::new(),
        length: spec.length,
        context: spec.context,
        choices: spec.choices,
        oracle: false,
        exact: Vec::new(),
        estimates: Vec::new(),
        mean_std_error: None,
        gold: Vec::new(),
        picked: Vec::new(),
        nfe: 0,
        wall_seconds: 0.0,
        error: Some(format!("{e:#}")),
    }
}

/// A task's rows, its multiple-choice options and their exact log-likelihoods.
struct TaskData {
    binding: TaskBinding,
    rows: Rows,
    exact: Vec<Option<f64>>,
    options: Rows,
    gold: Vec<usize>,
}

/// The suite's cell of (task, model) at the section's length, which says how the cells open
/// the model (and which training made its checkpoint).
fn cell_of<'a>(
    cells: &'a [CellSpec],
    task: &str,
    model: Option<&str>,
    length: usize,
) -> Option<&'a CellSpec> {
    cells.iter().find(|c| {
        c.task.name == task
            && c.length == length
            && match model {
                None => true,
                Some(m) => c.model.as_ref().is_some_and(|x| x.name == m),
            }
    })
}

fn load(libraries: &BTreeMap<PluginRef, PathBuf>, spec: &ComponentSpec) -> Result<LoadedPlugin> {
    let library = libraries
        .get(&spec.plugin)
        .with_context(|| format!("plugin {} was not built", spec.plugin))?;
    Ok(LoadedPlugin::load(library)?)
}

impl TaskData {
    fn of(
        name: &str,
        spec: &LikelihoodSpec,
        cells: &[CellSpec],
        libraries: &BTreeMap<PluginRef, PathBuf>,
    ) -> Result<TaskData> {
        let cell = cell_of(cells, name, None, spec.length).with_context(|| {
            format!(
                "no cell of task {name} at length {} in this run (filtered out?)",
                spec.length
            )
        })?;
        let plugin = load(libraries, &cell.task)?;
        let info = plugin
            .descriptor
            .component(ComponentKind::Task, &cell.task.component)
            .with_context(|| {
                format!(
                    "plugin {} has no task {}",
                    plugin.name(),
                    cell.task.component
                )
            })?;
        if !info.has("exact_loglikelihood") {
            anyhow::bail!(
                "task {name} ({}) has no exact log-likelihood (capability `exact_loglikelihood`); list only formal tasks in `likelihood.tasks`",
                cell.task.component
            );
        }
        let config = resolve_paths(&cell.task.config, info, cell.task.base_dir.as_deref());
        let task = plugin.open(
            ComponentKind::Task,
            &cell.task.component,
            &config.to_string(),
        )?;
        let (json, _) = call(
            &task,
            method::TASK_DESCRIBE,
            &DescribeTaskRequest {
                length: spec.length,
            },
            &[],
        )?;
        let description: TaskDescription = serde_json::from_str(&json)?;
        let (n, choices) = (spec.rows, spec.choices);
        let request = SampleReferenceRequest {
            length: spec.length,
            n: n * choices,
            seed: spec.seed,
            first_index: 0,
        };
        let (json, tokens) = call(&task, method::TASK_SAMPLE_REFERENCE, &request, &[])?;
        let shape: TokenBatch = serde_json::from_str(&json)?;
        let sequences = shape.unpack(&tokens).map_err(anyhow::Error::msg)?;
        let split =
            |x: &Vec<u32>, y: &Vec<u32>| (x[..spec.context].to_vec(), y[spec.context..].to_vec());
        let rows: Rows = sequences[..n].iter().map(|x| split(x, x)).collect();
        // Item i offers the continuations of sequences i, i + n, i + 2n, … after i's context.
        let options: Rows = (0..n)
            .flat_map(|i| (0..choices).map(move |j| (i, i + j * n)))
            .map(|(i, s)| split(&sequences[i], &sequences[s]))
            .collect();
        let exact = ask(&task, method::TASK_LOGLIKELIHOOD, &rows, spec.length, None)?;
        let exact_options = ask(
            &task,
            method::TASK_LOGLIKELIHOOD,
            &options,
            spec.length,
            None,
        )?;
        Ok(TaskData {
            binding: TaskBinding {
                plugin: plugin.descriptor.name.clone(),
                task: cell.task.component.clone(),
                config,
                description,
            },
            exact: values(&exact),
            gold: argmaxes(&values(&exact_options), choices),
            rows,
            options,
        })
    }
}

/// Load and open the model as its cell of this task does.
fn open_model(
    task: &str,
    model: &str,
    spec: &LikelihoodSpec,
    data: &TaskData,
    cells: &[CellSpec],
    libraries: &BTreeMap<PluginRef, PathBuf>,
    trained: &Trained,
) -> Result<(LoadedPlugin, Instance, bool)> {
    let cell = cell_of(cells, task, Some(model), spec.length).with_context(|| {
        format!(
            "model {model} has no cell on task {task} at length {} in this run (its `tasks:` leaves the task out, or a filter did)",
            spec.length
        )
    })?;
    let model_spec = cell.model.as_ref().context("a model cell")?;
    let checkpoint = match training::unit_of(cell) {
        None => None,
        Some(u) => match trained.get(&u.key()) {
            Some(Ok(record)) => Some(record.checkpoint_ref()),
            Some(Err(cause)) => anyhow::bail!("training {} failed: {cause}", u.key()),
            None => anyhow::bail!("training {} did not run", u.key()),
        },
    };
    let plugin = load(libraries, model_spec)?;
    let info = plugin
        .descriptor
        .component(ComponentKind::Model, &model_spec.component)
        .with_context(|| {
            format!(
                "plugin {} has no model {}",
                plugin.name(),
                model_spec.component
            )
        })?
        .clone();
    if !info.has("loglikelihood") {
        anyhow::bail!(
            "model {model} ({}) answers no likelihood requests (capability `loglikelihood`); leave it out of `likelihood.models`",
            model_spec.component
        );
    }
    let open = ModelOpenConfig {
        config: resolve_paths(&model_spec.config, &info, model_spec.base_dir.as_deref()),
        task: data.binding.clone(),
        train: None,
        checkpoint,
        base_dir: model_spec
            .base_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned()),
    };
    let instance = plugin.open(
        ComponentKind::Model,
        &model_spec.component,
        &serde_json::to_string(&open)?,
    )?;
    Ok((plugin, instance, info.has("oracle")))
}

/// `repeats` estimates of every row at `mc_num` draws, and the multiple-choice picks.
fn measure(
    model: &Instance,
    task: &TaskData,
    spec: &LikelihoodSpec,
    mc_num: usize,
) -> Result<LikelihoodRecord> {
    let started = Instant::now();
    let draws = match spec.draws.as_str() {
        "antithetic" => DrawScheme::Antithetic,
        "independent" => DrawScheme::Independent,
        _ => DrawScheme::Stratified,
    };
    let settings = |seed: u64| ElboSettings::new(mc_num, draws, spec.batch, seed);
    let (mut estimates, mut se_sum, mut se_count, mut nfe) = (Vec::new(), 0.0, 0usize, 0u64);
    let mut method_name = String::new();
    for repeat in 0..spec.repeats as u64 {
        let reply = ask(
            model,
            method::MODEL_LOGLIKELIHOOD,
            &task.rows,
            spec.length,
            Some(settings(repeat)),
        )?;
        nfe += reply.nfe;
        for se in reply.rows.iter().filter_map(|r| r.std_error) {
            se_sum += se;
            se_count += 1;
        }
        estimates.push(values(&reply));
        method_name = reply.method.clone();
        if reply.method == "exact" {
            break;
        }
    }
    let reply = ask(
        model,
        method::MODEL_LOGLIKELIHOOD,
        &task.options,
        spec.length,
        Some(settings(0)),
    )?;
    nfe += reply.nfe;
    let exact = method_name == "exact";
    Ok(LikelihoodRecord {
        task: String::new(),
        model: String::new(),
        mc_num: (!exact).then_some(mc_num),
        method: method_name,
        length: spec.length,
        context: spec.context,
        choices: spec.choices,
        oracle: false,
        exact: task.exact.clone(),
        estimates,
        mean_std_error: (se_count > 0).then(|| se_sum / se_count as f64),
        gold: task.gold.clone(),
        picked: argmaxes(&values(&reply), spec.choices),
        nfe,
        wall_seconds: started.elapsed().as_secs_f64(),
        error: None,
    })
}

fn call<R: serde::Serialize>(
    instance: &Instance,
    name: &str,
    request: &R,
    tokens: &[u32],
) -> Result<(String, Vec<u32>)> {
    instance
        .call(name, &serde_json::to_string(request)?, tokens)
        .map_err(|e| anyhow!("{name}: {e}"))
}

fn ask(
    instance: &Instance,
    name: &str,
    rows: &Rows,
    length: usize,
    elbo: Option<ElboSettings>,
) -> Result<LoglikelihoodReply> {
    let (request, buffer) = LoglikelihoodRequest::pack(rows, elbo);
    let (json, _) = call(instance, name, &request.with_length(length), &buffer)?;
    let reply: LoglikelihoodReply = serde_json::from_str(&json)?;
    if reply.rows.len() != rows.len() {
        anyhow::bail!(
            "{name} answered {} rows for {} asked",
            reply.rows.len(),
            rows.len()
        );
    }
    Ok(reply)
}

fn values(reply: &LoglikelihoodReply) -> Vec<Option<f64>> {
    reply.rows.iter().map(|r| r.log_likelihood).collect()
}

/// The option each item of `choices` consecutive values prefers (−∞ for `None`; the first
/// on ties).
pub(crate) fn argmaxes(values: &[Option<f64>], choices: usize) -> Vec<usize> {
    values
        .chunks(choices)
        .map(|c| {
            let v = |i: usize| c[i].unwrap_or(f64::NEG_INFINITY);
            (0..c.len()).fold(0, |best, i| if v(i) > v(best) { i } else { best })
        })
        .collect()
}
