//! A suite expanded into its cells.

use super::*;

impl Suite {
    /// Every cell of the sweep, in a stable order.
    pub fn cells(&self) -> Vec<CellSpec> {
        let mut cells = Vec::new();
        for &seed in &self.seeds {
            for &length in &self.lengths {
                for (ti, task) in self.tasks.iter().enumerate() {
                    let task_spec = ComponentSpec {
                        name: task.name.clone(),
                        plugin: task.plugin.clone(),
                        component: task.component.clone(),
                        config: task.config.clone(),
                        train: None,
                        baseline: None,
                        docs: task.docs.clone(),
                        base_dir: Some(task.base_dir.clone()),
                    };
                    let base =
                        |model: Option<ComponentSpec>, sampler: Option<SamplerSpec>| CellSpec {
                            task: task_spec.clone(),
                            model,
                            sampler,
                            length,
                            seed,
                            n: self.samples,
                            part: None,
                            batch_size: self.batch_size,
                            timeout_seconds: self.timeout_seconds,
                            trace: false,
                        };
                    if self.reference {
                        cells.push(base(None, None));
                    }
                    for model in self.models.iter().filter(|m| m.tasks.contains(&ti)) {
                        let model_spec = ComponentSpec {
                            name: model.name.clone(),
                            plugin: model.plugin.clone(),
                            component: model.component.clone(),
                            config: model.config.clone(),
                            train: model.train.clone(),
                            baseline: model.baseline.clone(),
                            docs: None,
                            base_dir: Some(model.base_dir.clone()),
                        };
                        for &si in &model.samplers {
                            let s = &self.samplers[si];
                            let steps = if s.steps.is_empty() {
                                vec![length]
                            } else {
                                s.steps.clone()
                            };
                            for st in steps {
                                cells.push(CellSpec {
                                    trace: self.trace,
                                    ..base(
                                        Some(model_spec.clone()),
                                        Some(SamplerSpec {
                                            name: s.sampler.clone(),
                                            steps: st,
                                            schedule: s.schedule.clone(),
                                            params: s.params.clone(),
                                        }),
                                    )
                                });
                            }
                        }
                    }
                }
            }
        }
        cells
    }

    /// The units of work of the sweep: its cells, each split into sample ranges of at most
    /// `shard_samples` (rounded up to whole batches) when the suite sets it, so that no shard
    /// waits on one huge cell. Shards run these; `merge` joins a cell's parts again.
    pub fn work_cells(&self) -> Vec<CellSpec> {
        let cells = self.cells();
        match self.shard_samples {
            None => cells,
            Some(most) => cells.iter().flat_map(|c| c.split(most)).collect(),
        }
    }
}

/// A task or model as a cell sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentSpec {
    /// Name in the suite.
    pub name: String,
    pub plugin: PluginRef,
    /// Component name inside the plugin.
    pub component: String,
    #[serde(default)]
    pub config: Value,
    /// Models only: train before sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<TrainSpec>,
    /// Models only: the suite's `baseline:` (not part of the cell's identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Text tasks only: the documents the cell scores (`doc_ids:`, `docs_from_replay:`), part
    /// of the cell's identity; `None`: the task's own order, all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<DocSelection>,
    /// The suite file's folder, which relative values of the config's path keys are joined
    /// to before the plugin sees them (a model also gets it as `ModelOpenConfig::base_dir`);
    /// not part of the cell's identity, so a suite moved with its files keeps its results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<std::path::PathBuf>,
}

/// How many of a text task's documents a cell scored (recorded where the suite selected some).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentCount {
    /// Documents the cell's samples answer.
    pub scored: usize,
    /// Documents the task has.
    pub of: usize,
}

/// Which documents of a text task a cell scores. Sample `i` of the cell answers the selected
/// document `i mod D` (D: how many are selected) as its sample number `i div D`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocSelection {
    /// `doc_ids:`: these prompt ids, in this order.
    Ids(Vec<String>),
    /// `docs_from_replay: true`: the ids the model answers (`model.prompt_ids`: the rows of a
    /// replay file), in the task's order. The reference row, which has no model, scores the
    /// task's documents in its own order.
    FromReplay,
}

/// One benchmark cell: a task, a model with a sampler (or the ground-truth reference row when
/// `model` is `None`), a length and a seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub task: ComponentSpec,
    pub model: Option<ComponentSpec>,
    pub sampler: Option<SamplerSpec>,
    pub length: usize,
    pub seed: u64,
    /// Samples in this cell, or in this part of a split cell.
    pub n: usize,
    /// Set on one part of a cell split by sample range (`shard_samples`): its samples are
    /// `part.first .. part.first + n` of the cell's `part.of`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<SamplePart>,
    pub batch_size: usize,
    pub timeout_seconds: f64,
    /// The suite's `trace: true` (model cells only): record each sample's trajectory.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace: bool,
}

/// Where a part of a split cell lies in the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplePart {
    /// Index of the part's first sample.
    pub first: usize,
    /// Samples of the whole cell.
    pub of: usize,
}

impl CellSpec {
    /// Human-readable key: `task/model/sampler@steps/L<length>/seed<seed>`.
    pub fn key(&self) -> String {
        let model = self
            .model
            .as_ref()
            .map(|m| m.name.as_str())
            .unwrap_or("reference");
        let sampler = self
            .sampler
            .as_ref()
            .map(SamplerSpec::label)
            .unwrap_or_else(|| "ground-truth".into());
        let whole = format!(
            "{}/{}/{}/L{}/seed{}",
            self.task.name, model, sampler, self.length, self.seed
        );
        match self.part {
            None => whole,
            Some(p) => format!("{whole}/samples{}-{}", p.first, p.first + self.n - 1),
        }
    }

    /// Indices of this cell's (or part's) samples. Samples depend on their index, not on the
    /// batch they are drawn in, so a part draws exactly the samples the whole cell would.
    pub fn sample_range(&self) -> std::ops::Range<usize> {
        let first = self.part.map_or(0, |p| p.first);
        first..first + self.n
    }

    /// The whole cell a part belongs to (itself when it is whole).
    pub fn whole(&self) -> CellSpec {
        let mut whole = self.clone();
        if let Some(p) = whole.part.take() {
            whole.n = p.of;
        }
        whole
    }

    /// This cell in parts of at most `most` samples, rounded up to whole batches so that every
    /// part draws the same batches as the whole cell (a model's batched arithmetic then cannot
    /// differ either); a cell that fits is returned whole.
    pub fn split(&self, most: usize) -> Vec<CellSpec> {
        let batch = self.batch_size.max(1);
        let size = most.div_ceil(batch).max(1) * batch;
        if self.part.is_some() || self.n <= size {
            return vec![self.clone()];
        }
        (0..self.n)
            .step_by(size)
            .map(|first| CellSpec {
                n: size.min(self.n - first),
                part: Some(SamplePart { first, of: self.n }),
                ..self.clone()
            })
            .collect()
    }

    /// Content hash of everything that determines the cell's samples (not where plugins live,
    /// not the timeout), so a moved checkout resumes the same units.
    pub fn unit_id(&self) -> String {
        // A selection joins the task's identity only when given, so other cells keep their ids.
        let task = match &self.task.docs {
            None => serde_json::json!([&self.task.name, &self.task.component, &self.task.config]),
            Some(docs) => serde_json::json!([
                &self.task.name,
                &self.task.component,
                &self.task.config,
                docs
            ]),
        };
        let identity = serde_json::json!({
            "task": task,
            "model": self.model.as_ref().map(|m| match &m.train {
                None => serde_json::json!([&m.name, &m.component, &m.config]),
                Some(t) => serde_json::json!([&m.name, &m.component, &m.config, t.identity()]),
            }),
            "sampler": &self.sampler,
            "length": self.length,
            "seed": self.seed,
            "n": self.n,
        });
        // Traced cells record more per sample; untraced ones keep the ids they had before.
        let identity = match self.trace {
            false => identity,
            true => serde_json::json!([identity, {"trace": true}]),
        };
        // Whole cells keep the ids they had before cells could be split.
        let identity = match self.part {
            None => identity,
            Some(p) => serde_json::json!([identity, {"part": [p.first, p.of]}]),
        };
        hex(&Sha256::digest(identity.to_string().as_bytes()))[..16].to_string()
    }

    pub fn is_reference(&self) -> bool {
        self.model.is_none()
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
