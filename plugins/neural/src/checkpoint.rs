//! Checkpoint files: a one-line magic, a one-line JSON header, then the weights as a Burn
//! record (burnpack bytes).
//!
//! The header holds a **fingerprint** — SHA-256 of the canonical JSON of everything that
//! determines the model (model kind, architecture, task description, training configuration,
//! seed, plugin name and version) — and the SHA-256 of the weight bytes. Loading recomputes
//! both and refuses a file whose header or weights do not match, a file from another plugin
//! version, or a fingerprint other than the one the caller expects.

use crate::model::{ModelKind, NetConfig, Transformer};
use crate::train_config::TrainConfig;
use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::{Bytes, Device};
use dlm_sdk::TaskDescription;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

/// First line of every checkpoint file.
pub const MAGIC: &str = "DLM-NEURAL-CHECKPOINT v1";
pub const PLUGIN_NAME: &str = "dlm-neural";
pub const PLUGIN_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What determines a model; its canonical JSON is hashed into the fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelIdentity {
    pub plugin: String,
    pub plugin_version: String,
    pub kind: ModelKind,
    /// Resolved architecture (`max_length` filled in).
    pub net: NetConfig,
    pub task: TaskDescription,
    /// `None` for an untrained (initialised) model.
    pub train: Option<TrainConfig>,
    /// Seed of the initial weights.
    pub seed: u64,
    /// Block diffusion: positions per block-causal attention block (`None`, and absent from
    /// the JSON, for the bidirectional MDM and the AR model, so their fingerprints are those of
    /// files written before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<usize>,
}

impl ModelIdentity {
    /// SHA-256 (hex) of the canonical JSON.
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_string(self).expect("identity serialises");
        hex(&Sha256::digest(json.as_bytes()))
    }
}

/// The header line of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointHeader {
    pub identity: ModelIdentity,
    /// `identity.fingerprint()` when the file was written.
    pub fingerprint: String,
    /// SHA-256 (hex) of the weight bytes that follow the header.
    pub weights_sha256: String,
    /// Last training loss (informational; not part of the fingerprint).
    #[serde(default)]
    pub final_loss: Option<f64>,
}

impl CheckpointHeader {
    pub fn new(
        kind: ModelKind,
        net: NetConfig,
        task: TaskDescription,
        train: Option<TrainConfig>,
        seed: u64,
    ) -> Self {
        let identity = ModelIdentity {
            plugin: PLUGIN_NAME.to_string(),
            plugin_version: PLUGIN_VERSION.to_string(),
            kind,
            net,
            task,
            train,
            seed,
            block_size: None,
        };
        CheckpointHeader {
            fingerprint: identity.fingerprint(),
            identity,
            weights_sha256: String::new(),
            final_loss: None,
        }
    }

    /// The header of a block-diffusion model with `block_size` (`None`: none).
    pub fn with_block_size(mut self, block_size: Option<usize>) -> Self {
        self.identity.block_size = block_size;
        self.fingerprint = self.identity.fingerprint();
        self
    }

    pub fn with_final_loss(mut self, loss: f64) -> Self {
        self.final_loss = loss.is_finite().then_some(loss);
        self
    }
}

/// A model and its header.
#[derive(Debug)]
pub struct Checkpoint {
    pub header: CheckpointHeader,
    pub net: Transformer,
}

impl Checkpoint {
    /// Write the checkpoint to `path` (atomically: a temporary file renamed into place).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let bytes = self
            .net
            .clone()
            .into_record()
            .into_bytes()
            .map_err(|e| format!("cannot serialise the weights: {e}"))?;
        let mut header = self.header.clone();
        header.fingerprint = header.identity.fingerprint();
        header.weights_sha256 = hex(&Sha256::digest(&bytes[..]));
        let mut out = Vec::with_capacity(bytes.len() + 4096);
        out.extend_from_slice(MAGIC.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(
            serde_json::to_string(&header)
                .map_err(|e| format!("cannot serialise the header: {e}"))?
                .as_bytes(),
        );
        out.push(b'\n');
        out.extend_from_slice(&bytes[..]);
        let tmp = path.with_extension("tmp-write");
        std::fs::write(&tmp, &out)
            .map_err(|e| format!("cannot write checkpoint {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path)
            .map_err(|e| format!("cannot write checkpoint {}: {e}", path.display()))?;
        Ok(())
    }

    /// Read and verify a checkpoint. `expected_fingerprint`, when given, must match the file's.
    pub fn load(
        path: &Path,
        expected_fingerprint: Option<&str>,
        device: &Device,
    ) -> Result<Checkpoint, String> {
        let data = std::fs::read(path)
            .map_err(|e| format!("cannot read checkpoint {}: {e}", path.display()))?;
        Self::from_bytes(&data, expected_fingerprint, device)
            .map_err(|e| format!("checkpoint {} refused: {e}", path.display()))
    }

    /// [`Checkpoint::load`] from the file's bytes.
    pub fn from_bytes(
        data: &[u8],
        expected_fingerprint: Option<&str>,
        device: &Device,
    ) -> Result<Checkpoint, String> {
        let (magic, rest) = split_line(data).ok_or("not a dlm-neural checkpoint (no header)")?;
        if magic != MAGIC.as_bytes() {
            return Err(format!(
                "not a dlm-neural checkpoint (first line is not `{MAGIC}`)"
            ));
        }
        let (header_line, weights) = split_line(rest).ok_or("truncated header")?;
        let header: CheckpointHeader =
            serde_json::from_slice(header_line).map_err(|e| format!("malformed header: {e}"))?;
        let id = &header.identity;
        if id.plugin != PLUGIN_NAME || id.plugin_version != PLUGIN_VERSION {
            return Err(format!(
                "written by {} {}, this is {PLUGIN_NAME} {PLUGIN_VERSION}; retrain the model",
                id.plugin, id.plugin_version
            ));
        }
        let fingerprint = id.fingerprint();
        if fingerprint != header.fingerprint {
            return Err(format!(
                "the header does not match its fingerprint (recorded {}, computed {fingerprint}): \
                 the file was edited or corrupted",
                header.fingerprint
            ));
        }
        if let Some(expected) = expected_fingerprint {
            if expected != fingerprint {
                return Err(format!(
                    "fingerprint mismatch: expected {expected}, the file holds {fingerprint} \
                     (a model trained with other settings)"
                ));
            }
        }
        let digest = hex(&Sha256::digest(weights));
        if digest != header.weights_sha256 {
            return Err(format!(
                "the weights are corrupted (SHA-256 {digest}, header says {})",
                header.weights_sha256
            ));
        }
        let vocab = id.task.vocab_size;
        let skeleton = Transformer::new(id.kind, &id.net, vocab, id.seed, device);
        let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(weights.to_vec()))
            .map_err(|e| format!("unreadable weights: {e}"))?;
        let net = skeleton
            .try_load_record(record)
            .map_err(|e| format!("the weights do not fit the architecture: {e}"))?
            .with_block_size(id.block_size);
        Ok(Checkpoint { header, net })
    }
}

fn split_line(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = data.iter().position(|&b| b == b'\n')?;
    Some((&data[..at], &data[at + 1..]))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
