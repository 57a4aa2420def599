//! Why a checkpoint cannot be loaded or run. Every message names the file (and the tensor or
//! field) and says what to do; the plugin turns them into [`dlm_sdk::PluginError`]s verbatim.

use std::path::PathBuf;

/// An error loading or running a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum HfError {
    /// A file cannot be read (missing, a directory, no permission, …).
    #[error("{path}: cannot read it: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `config.json` is not JSON, lacks a field, or has a value out of range.
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    /// `config.json` names an architecture this plugin does not implement.
    #[error(
        "{path}: architecture `{found}` is not supported; dlm-hf runs {supported} \
         (the `architectures` field of config.json)"
    )]
    UnsupportedArchitecture {
        path: PathBuf,
        found: String,
        supported: &'static str,
    },
    /// No weights file in the checkpoint folder.
    #[error(
        "{dir}: no model.safetensors or model.safetensors.index.json; a checkpoint folder holds \
         config.json, the safetensors weights and tokenizer.json"
    )]
    NoWeights { dir: PathBuf },
    /// A safetensors file (or the shard index) is malformed or cut short.
    #[error("{path}: {message}")]
    Weights { path: PathBuf, message: String },
    /// A tensor the architecture needs is in no file.
    #[error("{path}: no tensor `{tensor}` (the {architecture} architecture needs it){hint}")]
    MissingTensor {
        path: PathBuf,
        tensor: String,
        architecture: &'static str,
        hint: String,
    },
    /// A tensor has another shape than config.json implies.
    #[error(
        "{path}: tensor `{tensor}` has shape {found:?}, config.json implies {expected:?}; \
         the weights and config.json are of different models"
    )]
    Shape {
        path: PathBuf,
        tensor: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    /// A tensor is stored in a dtype this plugin cannot convert.
    #[error(
        "{path}: tensor `{tensor}` is stored as {dtype}; dlm-hf reads F32, F16 and BF16 \
         weights (convert the checkpoint, e.g. dequantise it)"
    )]
    Dtype {
        path: PathBuf,
        tensor: String,
        dtype: String,
    },
    /// `tokenizer.json` is missing or malformed (the SDK's message, which names the file).
    #[error("{0}")]
    Tokenizer(String),
    /// A setting of the model's config in the suite.
    #[error("{0}")]
    Setting(String),
    /// Bad input to a forward pass (token ids, lengths).
    #[error("{0}")]
    Input(String),
}

impl From<HfError> for dlm_sdk::PluginError {
    fn from(e: HfError) -> Self {
        let kind = match &e {
            HfError::Setting(_) => dlm_sdk::ErrorKind::BadConfig,
            HfError::UnsupportedArchitecture { .. } => dlm_sdk::ErrorKind::Unsupported,
            HfError::Input(_) => dlm_sdk::ErrorKind::Internal,
            // The checkpoint's files: config.json, weights, tokenizer.
            _ => dlm_sdk::ErrorKind::BadData,
        };
        dlm_sdk::PluginError::new(kind, e.to_string())
    }
}

/// The crate's result type.
pub type Result<T, E = HfError> = std::result::Result<T, E>;
