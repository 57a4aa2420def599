//! Training: MDLM's continuous-time loss for the MDM, next-token cross-entropy for the AR model,
//! AdamW with a cosine schedule and linear warm-up.

use crate::checkpoint::{Checkpoint, CheckpointHeader};
use crate::model::{subs_log_probs, tokens_tensor, ModelKind, NetConfig, Transformer};
pub use crate::noise::{
    mdm_noise, mdm_noise_at, mdm_noise_batch, mdm_noise_prompted, MdmNoise, T_EPS,
};
pub use crate::train_config::TrainConfig;
use burn::module::Module;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use dlm_sdk::TaskDescription;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// One progress report, after every optimiser step.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainProgress {
    /// Steps done (1-based).
    pub step: usize,
    pub steps: usize,
    /// Training loss of this step's batch.
    pub loss: f64,
    pub lr: f64,
    /// Training tokens per second so far (data generation included).
    pub tokens_per_second: f64,
}

/// Noise draws per held-out sequence in the MDM's validation ELBO ([`evaluate`]).
pub const VALIDATION_DRAWS: usize = 8;

/// MDLM's continuous-time ELBO of one batch (nats per token, no gradients), each sequence
/// estimated from `draws` noise draws at stratified times: draw `k` of sequence `i` is at
/// `t = (1 − ε)(u_i + k)/draws + ε` with `u_i ~ U(0, 1)`, one time in each `1/draws`-wide stratum
/// of `[0, 1]` (for two draws an antithetic pair `s`, `s + 1/2`). The mean of the draws is an
/// unbiased estimate of the same bound as one draw, with far less variance: the `1/t` weight makes
/// a single draw at small `t` very noisy, and stratification puts exactly one draw there.
pub fn mdm_elbo(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    draws: usize,
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> f64 {
    mdm_elbo_prompted(net, x0, batch, &[], draws, rng, device)
}

/// [`mdm_elbo`] of the completions only, given their prompts (see [`mdm_noise_prompted`]); a
/// block-diffusion network's is BD3-LM's ([`crate::block::bd3_elbo_prompted`]).
pub fn mdm_elbo_prompted(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    prompts: &[usize],
    draws: usize,
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> f64 {
    let length = x0.len() / batch;
    if let Some(block_size) = crate::block::bd3_block_size(net, length) {
        return crate::block::bd3_elbo_prompted(
            net, x0, batch, block_size, prompts, draws, rng, device,
        );
    }
    let draws = draws.max(1);
    let offsets: Vec<f64> = (0..batch).map(|_| rng.random()).collect();
    let mut total = 0.0;
    for k in 0..draws {
        let times: Vec<f64> = offsets
            .iter()
            .map(|u| (1.0 - T_EPS) * ((u + k as f64) / draws as f64) + T_EPS)
            .collect();
        let noise = mdm_noise_prompted(x0, &times, prompts, net.vocab, rng);
        let loss = mdm_loss_given(net, x0, &noise, batch, length, device);
        total += loss.into_scalar::<f32>() as f64;
    }
    total / draws as f64
}

/// MDLM continuous-time loss of one batch (`x0`: `batch × length` real tokens):
/// `Σ_masked −log p(x0 | xt) / t`, divided by the number of tokens.
pub fn mdm_loss(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> Tensor<1> {
    mdm_loss_prompted(net, x0, batch, &[], rng, device)
}

/// [`mdm_loss`] of the completions only, given their prompts. A block-diffusion network (more
/// than one block per sequence) takes BD3-LM's loss instead ([`crate::block`]).
pub fn mdm_loss_prompted(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    prompts: &[usize],
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> Tensor<1> {
    let length = x0.len() / batch;
    if let Some(block_size) = crate::block::bd3_block_size(net, length) {
        return crate::block::bd3_loss_prompted(net, x0, batch, block_size, prompts, rng, device);
    }
    let noise = mdm_noise_batch(x0, batch, prompts, net.vocab, rng);
    mdm_loss_given(net, x0, &noise, batch, length, device)
}

/// [`mdm_loss`] for a given noise draw.
pub fn mdm_loss_given(
    net: &Transformer,
    x0: &[u32],
    noise: &MdmNoise,
    batch: usize,
    length: usize,
    device: &Device,
) -> Tensor<1> {
    let xt = tokens_tensor(&noise.xt, batch, length, device);
    let target = tokens_tensor(x0, batch, length, device).reshape([batch, length, 1]);
    let weights = Tensor::<2>::from_data(
        TensorData::new(noise.weights.clone(), [batch, length]),
        device,
    );
    let logp = subs_log_probs(net.forward(xt.clone()), xt, net.vocab);
    let nll = logp.gather(2, target).reshape([batch, length]).neg();
    (nll * weights)
        .sum()
        .div_scalar(noise.counted.max(1) as f64)
}

/// AR next-token loss of one batch: the input is `[BOS, x_0, …, x_{L−2}]` (BOS = `vocab`), the
/// targets `x_0 … x_{L−1}`; mean cross-entropy over all positions.
pub fn ar_loss(net: &Transformer, x0: &[u32], batch: usize, device: &Device) -> Tensor<1> {
    ar_loss_prompted(net, x0, batch, &[], device)
}

/// [`ar_loss`] over the completions only: the first `prompts[i]` targets of sequence `i` are
/// its prompt, fed but not predicted.
pub fn ar_loss_prompted(
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    prompts: &[usize],
    device: &Device,
) -> Tensor<1> {
    let length = x0.len() / batch;
    let mut input = Vec::with_capacity(x0.len());
    for row in x0.chunks(length) {
        input.push(net.vocab as u32);
        input.extend_from_slice(&row[..length - 1]);
    }
    let input = tokens_tensor(&input, batch, length, device);
    let target = tokens_tensor(x0, batch, length, device).reshape([batch, length, 1]);
    let logp = log_softmax(net.forward(input), 2);
    let nll = logp.gather(2, target).neg();
    if prompts.iter().all(|&p| p == 0) {
        return nll.mean();
    }
    let mut mask = vec![0f32; batch * length];
    let mut counted = 0usize;
    for i in 0..batch {
        let prompt = prompts.get(i).copied().unwrap_or(0).min(length);
        for m in &mut mask[i * length + prompt..(i + 1) * length] {
            *m = 1.0;
        }
        counted += length - prompt;
    }
    let mask = Tensor::<3>::from_data(TensorData::new(mask, [batch, length, 1]), device);
    (nll * mask).sum().div_scalar(counted.max(1) as f64)
}

/// The model's training loss of one batch (for the MDM, with noise from `rng`).
pub fn loss(
    kind: ModelKind,
    net: &Transformer,
    x0: &[u32],
    batch: usize,
    prompts: &[usize],
    rng: &mut ChaCha8Rng,
    device: &Device,
) -> Tensor<1> {
    match kind {
        ModelKind::Mdm => mdm_loss_prompted(net, x0, batch, prompts, rng, device),
        ModelKind::Ar => ar_loss_prompted(net, x0, batch, prompts, device),
    }
}

/// Check a batch from the data source and flatten it.
pub fn flatten_batch(
    seqs: &[Vec<u32>],
    batch: usize,
    length: usize,
    vocab: usize,
) -> Result<Vec<u32>, String> {
    if seqs.len() != batch {
        return Err(format!(
            "data source returned {} sequences, expected {batch}",
            seqs.len()
        ));
    }
    let mut flat = Vec::with_capacity(batch * length);
    for (i, s) in seqs.iter().enumerate() {
        if s.len() != length {
            return Err(format!(
                "data source sequence {i} has length {}, expected {length}",
                s.len()
            ));
        }
        if let Some(&bad) = s.iter().find(|&&t| t as usize >= vocab) {
            return Err(format!(
                "data source sequence {i} holds token {bad}, outside the vocabulary 0..{vocab}"
            ));
        }
        flat.extend_from_slice(s);
    }
    Ok(flat)
}

/// One AdamW optimiser with the training configuration's settings.
pub fn optimizer(config: &TrainConfig) -> burn::optim::ModuleOptimizer {
    AdamWConfig::new()
        .with_beta_1(0.9)
        .with_beta_2(0.999)
        .with_epsilon(1e-8)
        .with_weight_decay(config.weight_decay as f32)
        .with_grad_clipping(
            config
                .grad_clip
                .map(|c| GradientClippingConfig::Norm(c as f32)),
        )
        .init()
}

/// A training run in progress: the model on the autodiff device, its optimiser and noise
/// stream. The harness drives it one batch at a time (`model.train_step`); [`train`] drives it
/// from a closure.
pub struct Trainer {
    kind: ModelKind,
    net_config: NetConfig,
    task: TaskDescription,
    config: TrainConfig,
    /// The autodiff device the model trains on, and the plain one it evaluates on.
    device: Device,
    base_device: Device,
    /// `None` only while a step is moving it through the optimiser.
    model: Option<Transformer>,
    optim: burn::optim::ModuleOptimizer,
    rng: ChaCha8Rng,
    step: usize,
    last_loss: f64,
    started: Instant,
}

impl Trainer {
    /// A freshly initialised model (`net.max_length` defaults to the task length).
    pub fn new(
        kind: ModelKind,
        net: &NetConfig,
        task: &TaskDescription,
        config: &TrainConfig,
        device: &Device,
    ) -> Result<Self, String> {
        config.validate()?;
        let net_config = net.resolved(task.length)?;
        if task.length > net_config.max_len() {
            return Err(format!(
                "the task length {} exceeds the model's max_length {}",
                task.length,
                net_config.max_len()
            ));
        }
        let train_device = device.clone().autodiff();
        let model = Transformer::new(
            kind,
            &net_config,
            task.vocab_size,
            config.seed,
            &train_device,
        );
        Ok(Trainer {
            kind,
            net_config,
            task: task.clone(),
            config: config.clone(),
            device: train_device,
            base_device: device.clone(),
            model: Some(model),
            optim: optimizer(config),
            // The noise stream is separate from the weight initialisation stream.
            rng: ChaCha8Rng::seed_from_u64(config.seed ^ 0x6e6f_6973_655f_7264),
            step: 0,
            last_loss: f64::NAN,
            started: Instant::now(),
        })
    }

    /// The same run for a block-diffusion model: block-causal attention in blocks of
    /// `block_size` positions and BD3-LM's loss (`None`: unchanged). Call before the first step.
    pub fn with_block_size(mut self, block_size: Option<usize>) -> Result<Self, String> {
        if let Some(b) = block_size {
            if self.kind != ModelKind::Mdm || b == 0 || b > self.task.length {
                return Err(format!(
                    "block_size {b} needs the mdm model and 1 ≤ block_size ≤ the length {}",
                    self.task.length
                ));
            }
        }
        self.model = self.model.take().map(|m| m.with_block_size(block_size));
        Ok(self)
    }

    /// Optimiser steps taken so far.
    pub fn steps_done(&self) -> usize {
        self.step
    }

    /// One optimiser step on `seqs` (exactly `batch_size` sequences of the task's length), the
    /// first `prompts[i]` tokens of sequence `i` its prompt (empty: no prompts).
    pub fn step(&mut self, seqs: &[Vec<u32>], prompts: &[usize]) -> Result<TrainProgress, String> {
        let step = self.step;
        if step >= self.config.steps {
            return Err(format!(
                "training was configured for {} steps; step {step} is one too many",
                self.config.steps
            ));
        }
        let (vocab, length, batch) = (
            self.task.vocab_size,
            self.task.length,
            self.config.batch_size,
        );
        let x0 = flatten_batch(seqs, batch, length, vocab)
            .map_err(|e| format!("training batch {step}: {e}"))?;
        let model = self.model.take().expect("model present between steps");
        let loss = loss(
            self.kind,
            &model,
            &x0,
            batch,
            prompts,
            &mut self.rng,
            &self.device,
        );
        let value = loss.clone().into_scalar::<f32>() as f64;
        if !value.is_finite() {
            self.model = Some(model);
            return Err(format!(
                "training diverged at step {step}: loss {value}; lower `lr` or enable `grad_clip`"
            ));
        }
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let lr = self.config.learning_rate(step);
        self.model = Some(self.optim.step(lr, model, grads));
        self.last_loss = value;
        self.step += 1;
        let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
        Ok(TrainProgress {
            step: self.step,
            steps: self.config.steps,
            loss: value,
            lr,
            tokens_per_second: (self.step * batch * length) as f64 / seconds,
        })
    }

    /// The model as it is now, for inference (no autodiff), on the base device.
    pub fn inference_model(&self) -> Transformer {
        self.model
            .as_ref()
            .expect("model present between steps")
            .clone()
            .valid()
    }

    /// Held-out loss (nats per token) over `batches`, no update: see [`evaluate`] (the MDM's
    /// ELBO from [`VALIDATION_DRAWS`] noise draws per sequence, from a fixed seed so repeated
    /// evaluations are comparable).
    pub fn evaluate(
        &self,
        batches: &[Vec<Vec<u32>>],
        prompts: &[Vec<usize>],
    ) -> Result<f64, String> {
        let net = self.inference_model();
        evaluate(
            self.kind,
            &net,
            batches,
            prompts,
            self.config.seed ^ 0x7661_6c69_6461_7465,
            &self.base_device,
        )
    }

    /// The trained model and its checkpoint header (identity, final loss).
    pub fn checkpoint(&self) -> Result<Checkpoint, String> {
        if self.step != self.config.steps {
            return Err(format!(
                "training stopped after {} of {} steps; refusing to write a partly trained model",
                self.step, self.config.steps
            ));
        }
        let header = CheckpointHeader::new(
            self.kind,
            self.net_config.clone(),
            self.task.clone(),
            Some(self.config.clone()),
            self.config.seed,
        )
        .with_block_size(self.inference_model().block_size());
        Ok(Checkpoint {
            header: header.with_final_loss(self.last_loss),
            net: self.inference_model(),
        })
    }
}

/// Train a model from scratch on the task's data.
///
/// * `net` — the architecture (`max_length` defaults to the task length);
/// * `data(batch_size, step)` — the training sequences of step `step` (each of the task's
///   length, real tokens only);
/// * `progress` — called after every step.
///
/// Returns the trained model (in inference mode, on `device`) with its checkpoint header.
pub fn train<D, P>(
    kind: ModelKind,
    net: &NetConfig,
    task: &TaskDescription,
    config: &TrainConfig,
    device: &Device,
    mut data: D,
    mut progress: P,
) -> Result<Checkpoint, String>
where
    D: FnMut(usize, usize) -> Result<Vec<Vec<u32>>, String>,
    P: FnMut(&TrainProgress),
{
    let mut trainer = Trainer::new(kind, net, task, config, device)?;
    for step in 0..config.steps {
        let seqs =
            data(config.batch_size, step).map_err(|e| format!("data source, step {step}: {e}"))?;
        let p = trainer
            .step(&seqs, &[])
            .map_err(|e| format!("data source, step {step}: {e}"))?;
        progress(&p);
    }
    trainer.checkpoint()
}

/// Mean loss over `batches` (no gradients): the AR model's exact NLL per token, the MDM's ELBO
/// per token from [`VALIDATION_DRAWS`] stratified noise draws per sequence ([`mdm_elbo`]) drawn
/// from `seed`, so the value is reproducible.
pub fn evaluate(
    kind: ModelKind,
    net: &Transformer,
    batches: &[Vec<Vec<u32>>],
    prompts: &[Vec<usize>],
    seed: u64,
    device: &Device,
) -> Result<f64, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut total = 0.0;
    for (b, seqs) in batches.iter().enumerate() {
        let prompts: &[usize] = prompts.get(b).map_or(&[], Vec::as_slice);
        if seqs.is_empty() {
            return Err("an empty validation batch".into());
        }
        let length = seqs[0].len();
        let x0 = flatten_batch(seqs, seqs.len(), length, net.vocab)?;
        total += match kind {
            ModelKind::Mdm => mdm_elbo_prompted(
                net,
                &x0,
                seqs.len(),
                prompts,
                VALIDATION_DRAWS,
                &mut rng,
                device,
            ),
            ModelKind::Ar => {
                ar_loss_prompted(net, &x0, seqs.len(), prompts, device).into_scalar::<f32>() as f64
            }
        };
    }
    Ok(total / batches.len().max(1) as f64)
}
