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
                    };
                    let base =
                        |model: Option<ComponentSpec>, sampler: Option<SamplerSpec>| CellSpec {
                            task: task_spec.clone(),
                            model,
                            sampler,
                            length,
                            seed,
                            n: self.samples,
                            batch_size: self.batch_size,
                            timeout_seconds: self.timeout_seconds,
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
                        };
                        for &si in &model.samplers {
                            let s = &self.samplers[si];
                            let steps = if s.steps.is_empty() {
                                vec![length]
                            } else {
                                s.steps.clone()
                            };
                            for st in steps {
                                cells.push(base(
                                    Some(model_spec.clone()),
                                    Some(SamplerSpec {
                                        name: s.sampler.clone(),
                                        steps: st,
                                        schedule: s.schedule.clone(),
                                        params: s.params.clone(),
                                    }),
                                ));
                            }
                        }
                    }
                }
            }
        }
        cells
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
    pub n: usize,
    pub batch_size: usize,
    pub timeout_seconds: f64,
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
        format!(
            "{}/{}/{}/L{}/seed{}",
            self.task.name, model, sampler, self.length, self.seed
        )
    }

    /// Content hash of everything that determines the cell's samples (not where plugins live,
    /// not the timeout), so a moved checkout resumes the same units.
    pub fn unit_id(&self) -> String {
        let identity = serde_json::json!({
            "task": [&self.task.name, &self.task.component, &self.task.config],
            "model": self.model.as_ref().map(|m| match &m.train {
                None => serde_json::json!([&m.name, &m.component, &m.config]),
                Some(t) => serde_json::json!([&m.name, &m.component, &m.config, t.identity()]),
            }),
            "sampler": &self.sampler,
            "length": self.length,
            "seed": self.seed,
            "n": self.n,
        });
        hex(&Sha256::digest(identity.to_string().as_bytes()))[..16].to_string()
    }

    pub fn is_reference(&self) -> bool {
        self.model.is_none()
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
