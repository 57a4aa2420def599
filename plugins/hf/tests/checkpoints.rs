//! Checkpoint folders in every shape the loader accepts (sharded with an index, weights
//! stored as BF16) give the reference logits; broken ones (a shard cut short or missing, a
//! tensor of the wrong shape, missing or stored in an unsupported dtype, an unknown
//! architecture, no tokenizer.json) are refused with a message naming the file and the
//! tensor. Each doctored folder is built in a temporary directory from a good fixture.

mod common;
use burn::tensor::DType;
use common::*;

const LLADA: &str = "llada-tiny";
const DREAM: &str = "dream-tiny";

fn assert_mentions(error: &str, parts: &[&str]) {
    eprintln!("refused: {error}");
    for part in parts {
        assert!(error.contains(part), "`{part}` missing from: {error}");
    }
}

/// Split the fixture's weights into two shards with an index, as large checkpoints ship.
fn shard(name: &str) -> tempfile::TempDir {
    let dir = copy_fixture(name);
    let single = dir.path().join("model.safetensors");
    let tensors = read_tensors(&single);
    std::fs::remove_file(&single).unwrap();
    let (a, b) = tensors.split_at(tensors.len() / 2);
    let mut map = serde_json::Map::new();
    for (file, part) in [
        ("model-00001-of-00002.safetensors", a),
        ("model-00002-of-00002.safetensors", b),
    ] {
        write_tensors(&dir.path().join(file), part);
        for t in part {
            map.insert(t.0.clone(), file.into());
        }
    }
    let index = serde_json::json!({"metadata": {"total_size": 0}, "weight_map": map});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    dir
}

#[test]
fn sharded_checkpoints_load_as_one() {
    for name in [LLADA, DREAM] {
        let reference = Reference::load(name);
        let dir = shard(name);
        let ckpt = open(dir.path(), DType::F32).unwrap();
        let diff = max_abs_diff(&reference_logits(&ckpt, &reference), &reference.logits);
        assert!(diff <= 1e-4, "{name} sharded: {diff}");
        // One shard gone: named, with the index that lists it.
        std::fs::remove_file(dir.path().join("model-00002-of-00002.safetensors")).unwrap();
        let e = open(dir.path(), DType::F32).err().unwrap();
        assert_mentions(
            &e,
            &[
                "model-00002-of-00002.safetensors",
                "missing",
                "model.safetensors.index.json",
            ],
        );
    }
}

#[test]
fn bf16_weights_are_converted_as_they_load() {
    for name in [LLADA, DREAM] {
        let reference = Reference::load(name);
        let dir = copy_fixture(name);
        let path = dir.path().join("model.safetensors");
        let tensors: Vec<RawTensor> = read_tensors(&path)
            .into_iter()
            .map(|(n, _, s, b)| (n, safetensors::Dtype::BF16, s, f32_to_bf16_bytes(&b)))
            .collect();
        write_tensors(&path, &tensors);
        let ckpt = open(dir.path(), DType::F32).unwrap();
        assert_eq!(
            ckpt.stats.largest_tensor_bytes,
            512 * 64 * 2,
            "one embedding-sized tensor at a time"
        );
        // Weights rounded to 8 significant bits move logits of size ~4 by a few hundredths;
        // a misread byte order or dtype would move them by whole units.
        let diff = max_abs_diff(&reference_logits(&ckpt, &reference), &reference.logits);
        eprintln!("{name}: BF16-stored weights, f32 compute: max |Δ logits| = {diff:.3e}");
        assert!(diff < 0.1, "{name}: {diff}");
    }
}

#[test]
fn a_truncated_file_is_refused_naming_it_and_the_tensors_past_its_end() {
    let dir = copy_fixture(LLADA);
    let path = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(
        &e,
        &[
            "model.safetensors",
            "cut short",
            &format!("header describes {}", bytes.len()),
            "tensors `model.transformer.",
            "download it again",
        ],
    );
    // Cut inside the header itself.
    std::fs::write(&path, &bytes[..100]).unwrap();
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(&e, &["model.safetensors", "shorter than its own", "header"]);
}

#[test]
fn a_tensor_of_the_wrong_shape_is_refused_naming_it() {
    let dir = copy_fixture(DREAM);
    let path = dir.path().join("model.safetensors");
    let wrong = "model.layers.1.self_attn.k_proj.weight";
    let tensors: Vec<RawTensor> = read_tensors(&path)
        .into_iter()
        .map(|(n, d, s, b)| {
            let s = if n == wrong { vec![s[1], s[0]] } else { s };
            (n, d, s, b)
        })
        .collect();
    write_tensors(&path, &tensors);
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(
        &e,
        &[
            "model.safetensors",
            wrong,
            "[64, 32]",
            "[32, 64]",
            "config.json",
        ],
    );
}

#[test]
fn a_missing_tensor_or_an_unsupported_dtype_is_refused_naming_the_tensor() {
    let dir = copy_fixture(LLADA);
    let path = dir.path().join("model.safetensors");
    let gone = "model.transformer.blocks.0.up_proj.weight";
    let original = read_tensors(&path);
    let fewer: Vec<RawTensor> = original.iter().filter(|t| t.0 != gone).cloned().collect();
    write_tensors(&path, &fewer);
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(&e, &["model.safetensors", gone, "LLaDAModelLM"]);

    // Quantised storage: one tensor as I8.
    let int8: Vec<RawTensor> = original
        .into_iter()
        .map(|(n, d, s, b)| {
            if n == gone {
                let count = s.iter().product::<usize>();
                (n, safetensors::Dtype::I8, s, vec![1u8; count])
            } else {
                (n, d, s, b)
            }
        })
        .collect();
    write_tensors(&path, &int8);
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(&e, &["model.safetensors", gone, "I8", "F32, F16 and BF16"]);
}

#[test]
fn an_unknown_architecture_is_refused_naming_config_json() {
    let dir = copy_fixture(DREAM);
    let path = dir.path().join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["architectures"] = serde_json::json!(["MistralForCausalLM"]);
    std::fs::write(&path, config.to_string()).unwrap();
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(
        &e,
        &[
            "config.json",
            "MistralForCausalLM",
            "LLaDAModelLM",
            "DreamModel",
        ],
    );
}

#[test]
fn a_missing_tokenizer_or_weights_file_is_refused_naming_it() {
    let dir = copy_fixture(LLADA);
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(&e, &["tokenizer.json", "missing"]);

    let dir = copy_fixture(LLADA);
    std::fs::write(dir.path().join("tokenizer.json"), "{\"model\": 1}").unwrap();
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(&e, &["tokenizer.json", "not a Hugging Face tokenizer.json"]);

    let dir = copy_fixture(LLADA);
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    let e = open(dir.path(), DType::F32).err().unwrap();
    assert_mentions(&e, &["no model.safetensors"]);

    let e = open(&dir.path().join("nowhere"), DType::F32).err().unwrap();
    assert_mentions(&e, &["nowhere", "not a directory"]);
}
