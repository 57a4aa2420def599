//! Shared helpers of dlm-hf's tests: the fixture checkpoints and their reference logits.
#![allow(dead_code)]

use burn::tensor::{Device, Tensor};
use dlm_hf::Checkpoint;
use std::path::PathBuf;

mod recording;
#[allow(unused_imports)] // used by the cache tests only
pub use recording::{Call, Recording};

/// `plugins/hf/tests/fixtures/NAME`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The device the tests run on: `flex`, or the one `DLM_HF_TEST_DEVICE` names (`.ci/run`:
/// `wgpu` on lavapipe, with `--features wgpu`; tools/tch/test.sh: `tch`, with `--features tch`).
pub fn device_name() -> String {
    std::env::var("DLM_HF_TEST_DEVICE").unwrap_or_else(|_| "flex".into())
}

pub fn device() -> Device {
    dlm_hf::plugin::parse_device(Some(&device_name()))
        .unwrap_or_else(|e| panic!("{e}"))
        .0
}

/// A fixture checkpoint on the test device in f32.
pub fn load(name: &str) -> Checkpoint {
    Checkpoint::open(
        &fixture(name),
        &device(),
        "test",
        burn::tensor::DType::F32,
        None,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// reference.json: input ids (the checkpoint's own) and the PyTorch logits.
pub struct Reference {
    pub input_ids: Vec<Vec<u32>>,
    pub mask_token_id: u32,
    pub shape: [usize; 3],
    pub logits: Vec<f32>,
}

impl Reference {
    pub fn load(name: &str) -> Reference {
        let path = fixture(name).join("reference.json");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let shape: Vec<usize> = serde_json::from_value(v["shape"].clone()).unwrap();
        let r = Reference {
            input_ids: serde_json::from_value(v["input_ids"].clone()).unwrap(),
            // An autoregressive fixture has none (`null`).
            mask_token_id: v["mask_token_id"].as_u64().map_or(u32::MAX, |m| m as u32),
            shape: [shape[0], shape[1], shape[2]],
            logits: serde_json::from_value(v["logits"].clone()).unwrap(),
        };
        assert_eq!(r.logits.len(), shape.iter().product::<usize>());
        r
    }

    pub fn flat_ids(&self) -> Vec<u32> {
        self.input_ids.iter().flatten().copied().collect()
    }
}

pub fn to_host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data_as::<f32>().try_into_vec::<f32>().unwrap()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// A copy of fixture `name` in a fresh temporary directory (removed on drop).
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    dir
}

/// One tensor of a safetensors file: name, dtype, shape, little-endian bytes.
pub type RawTensor = (String, safetensors::Dtype, Vec<usize>, Vec<u8>);

/// Every tensor of the safetensors file at `path`, sorted by name.
pub fn read_tensors(path: &std::path::Path) -> Vec<RawTensor> {
    let bytes = std::fs::read(path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Vec<RawTensor> = file
        .tensors()
        .into_iter()
        .map(|(n, v)| (n, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Write `tensors` as a safetensors file at `path`.
pub fn write_tensors(path: &std::path::Path, tensors: &[RawTensor]) {
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
            )
        })
        .collect();
    std::fs::write(path, safetensors::serialize(views, None).unwrap()).unwrap();
}

/// f32 little-endian bytes → bf16 (round to nearest even).
pub fn f32_to_bf16_bytes(bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks_exact(4)
        .flat_map(|c| {
            let bits = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
            (rounded as u16).to_le_bytes()
        })
        .collect()
}

/// Open checkpoint folder `dir` on the test device in `dtype`; the error's message on failure.
pub fn open(dir: &std::path::Path, dtype: burn::tensor::DType) -> Result<Checkpoint, String> {
    Checkpoint::open(dir, &device(), "test", dtype, None).map_err(|e| e.to_string())
}

/// The logits of `ckpt` for the fixture's reference input.
pub fn reference_logits(ckpt: &Checkpoint, reference: &Reference) -> Vec<f32> {
    let [batch, length, _] = reference.shape;
    let net = &ckpt.denoiser.net;
    to_host(
        net.forward(
            net.ids_tensor(&reference.flat_ids(), batch, length)
                .unwrap(),
        ),
    )
}
