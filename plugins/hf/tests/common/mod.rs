//! Shared helpers of dlm-hf's tests: the fixture checkpoints and their reference logits.
#![allow(dead_code)]

use burn::tensor::{Device, Tensor};
use dlm_hf::Checkpoint;
use std::path::PathBuf;

/// `plugins/hf/tests/fixtures/NAME`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fixture checkpoint on flex in f32.
pub fn load(name: &str) -> Checkpoint {
    Checkpoint::open(
        &fixture(name),
        &Device::flex(),
        "cpu",
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
            mask_token_id: v["mask_token_id"].as_u64().unwrap() as u32,
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
