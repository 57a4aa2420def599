//! Models that own a tokenizer: opened with the fixture `tokenizer.json` on a text task without
//! a vocabulary (as GSM8K), they answer prompt texts with text; bad files and training are
//! refused with messages that say why.

use crate::model::ModelKind;
use crate::plugin::{open_checkpoint, parse_device, MdmDenoiser, NeuralPlugin, OpenConfig};
use dlm_sdk::tokenizer::HfTokenizer;
use dlm_sdk::{
    DenoiserModel, GenerateRequest, Model, ModelOpenConfig, Plugin, Prompt, SamplerSpec,
    TaskBinding, TaskDescription, TextTaskInfo, TrainSettings,
};
use serde_json::json;
use std::path::PathBuf;

const LENGTH: usize = 40;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A text task with no vocabulary of its own, as GSM8K describes itself.
fn text_task() -> TaskDescription {
    let mut d = TaskDescription::new("words", 0, LENGTH);
    d.details = json!({"task": "words"});
    d.text = Some(TextTaskInfo::new(vec!["Question :".into()]));
    d
}

fn open_config(config: serde_json::Value, train: Option<TrainSettings>) -> ModelOpenConfig {
    ModelOpenConfig {
        config,
        task: TaskBinding {
            plugin: "test".into(),
            task: "words".into(),
            config: serde_json::Value::Null,
            description: text_task(),
        },
        train,
        checkpoint: None,
        base_dir: None,
    }
}

fn config(tokenizer: PathBuf) -> serde_json::Value {
    json!({"init": {"hidden": 16, "layers": 1, "heads": 2}, "seed": 3, "tokenizer": tokenizer})
}

fn open(name: &str, config: serde_json::Value) -> dlm_sdk::Result<Box<dyn Model>> {
    NeuralPlugin::open_model(name, open_config(config, None))
}

const PROMPTS: [&str; 8] = [
    "Question: She has 3 and 4 more. how many ? Answer:",
    "Question: He has 12 and 2 . how many ?",
    "The total is 20",
    "each day",
    "Question: 5 + 7 = ?",
    "a",
    "so 2 * 3 = 6",
    "Answer:",
];

fn request(sampler: &str, steps: usize) -> GenerateRequest {
    GenerateRequest {
        batch_size: PROMPTS.len(),
        length: LENGTH,
        sampler: SamplerSpec {
            name: sampler.into(),
            steps,
            schedule: None,
            params: Default::default(),
        },
        seed: 11,
        first_index: 0,
        prompts: None,
        prompt_texts: Some(
            PROMPTS
                .iter()
                .enumerate()
                .map(|(i, t)| Prompt {
                    id: format!("q{i}"),
                    text: t.to_string(),
                    reference: None,
                })
                .collect(),
        ),
        trace: false,
    }
}

#[test]
fn the_mdm_answers_prompt_texts_with_completions_cut_at_end_of_text() {
    let tok = HfTokenizer::from_file(fixture("tokenizer.json")).unwrap();
    let eos = tok.eos_id().expect("the fixture has </s>");
    let mut model = open("mdm", config(fixture("tokenizer.json"))).unwrap();
    let req = request("low_confidence", 8);
    let (tokens, reply) = model.generate(&req).unwrap();
    assert!(tokens.is_empty(), "a text model sends no token ids");
    let texts = reply.texts.clone().expect("texts come back");
    assert_eq!(texts.len(), PROMPTS.len());
    assert_eq!(reply.samples.len(), PROMPTS.len());

    // The same network and sampler over the encoded prompts, token by token.
    let mut net_task = text_task();
    net_task.vocab_size = tok.vocab_size();
    net_task.mask_id = tok.vocab_size() as u32;
    let oc: OpenConfig = serde_json::from_value(config(fixture("tokenizer.json"))).unwrap();
    let device = parse_device(None).unwrap();
    let ckpt = open_checkpoint(ModelKind::Mdm, &oc, &net_task, &device).unwrap();
    let mut plain = DenoiserModel::new(MdmDenoiser {
        net: ckpt.net,
        device,
        label: "cpu".into(),
    });
    let encoded: Vec<Vec<u32>> = PROMPTS.iter().map(|p| tok.encode(p).unwrap()).collect();
    let (seqs, plain_reply) = plain
        .generate(&GenerateRequest {
            prompts: Some(encoded.clone()),
            prompt_texts: None,
            ..req
        })
        .unwrap();
    let mut stopped_early = 0;
    for (i, ((seq, prompt), text)) in seqs.iter().zip(&encoded).zip(&texts).enumerate() {
        assert_eq!(
            &seq[..prompt.len()],
            &prompt[..],
            "prompt tokens stay fixed"
        );
        let region = &seq[prompt.len()..];
        let end = region
            .iter()
            .position(|&t| t == eos)
            .unwrap_or(region.len());
        stopped_early += usize::from(end < region.len());
        let full = tok.decode(&region[..end]).unwrap();
        let (expected, count) = match full.find("Question :") {
            None => (full.clone(), end),
            Some(at) => (
                full[..at].to_string(),
                tok.encode(&full[..at]).unwrap().len(),
            ),
        };
        assert_eq!(text, &expected, "sample {i}");
        let prompt_text = tok.decode(prompt).unwrap();
        assert!(
            prompt_text.len() < 8 || !text.contains(&prompt_text),
            "sample {i} echoes its prompt: {text:?}"
        );
        let stats = &reply.samples[i];
        assert_eq!(
            stats.generated_tokens, count as u64,
            "sample {i}: {stats:?}"
        );
        assert_eq!(stats.nfe, plain_reply.samples[i].nfe);
    }
    assert!(
        stopped_early > 0,
        "no completion met the end-of-text token in {} samples",
        PROMPTS.len()
    );
    assert_eq!(reply.batch_nfe, plain_reply.batch_nfe);
}

#[test]
fn the_ar_model_answers_prompt_texts_too() {
    let mut model = open("ar", config(fixture("tokenizer.json"))).unwrap();
    let (tokens, reply) = model.generate(&request("ar", LENGTH)).unwrap();
    assert!(tokens.is_empty());
    assert_eq!(reply.texts.unwrap().len(), PROMPTS.len());
    for s in &reply.samples {
        assert!(s.generated_tokens < LENGTH as u64, "{s:?}");
        assert!(s.nfe > 0);
    }
}

#[test]
fn prompts_longer_than_the_length_are_refused() {
    let mut model = open("mdm", config(fixture("tokenizer.json"))).unwrap();
    let mut req = request("ddpm", 4);
    req.prompt_texts.as_mut().unwrap()[2].text = "a ".repeat(LENGTH);
    let e = model.generate(&req).err().unwrap().to_string();
    assert!(e.contains("`q2`") && e.contains("raise `lengths`"), "{e}");
}

#[test]
fn missing_and_malformed_tokenizers_fail_the_open_naming_the_file() {
    let e = open("mdm", config(fixture("no-such-tokenizer.json")))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no-such-tokenizer.json") && e.contains("cannot read"),
        "{e}"
    );
    let e = open("ar", config(fixture("malformed-tokenizer.json")))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("malformed-tokenizer.json") && e.contains("not a Hugging Face tokenizer.json"),
        "{e}"
    );
    let mut c = config(fixture("tokenizer.json"));
    c["eos_token"] = json!("<|endoftext|>");
    let e = open("mdm", c).err().unwrap().to_string();
    assert!(
        e.contains("tokenizer.json") && e.contains("<|endoftext|>"),
        "{e}"
    );
}

#[test]
fn a_text_task_without_vocabulary_needs_a_tokenizer() {
    let e = open(
        "mdm",
        json!({"init": {"hidden": 16, "layers": 1, "heads": 2}}),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("no vocabulary") && e.contains("tokenizer"),
        "{e}"
    );
}

#[test]
fn a_model_with_a_tokenizer_is_not_trained_by_the_harness() {
    let settings = TrainSettings {
        steps: 10,
        batch_size: 2,
        seed: 0,
        data: serde_json::Value::Null,
        options: serde_json::Value::Null,
    };
    let e = NeuralPlugin::open_model(
        "mdm",
        open_config(config(fixture("tokenizer.json")), Some(settings)),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("cannot be trained by the harness") && e.contains("tokenizer"),
        "{e}"
    );
    // An instance opened for generation refuses the training methods as well.
    let mut model = open("mdm", config(fixture("tokenizer.json"))).unwrap();
    let e = model
        .train_step(0, &[vec![2, 3]], &[1])
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be trained by the harness"), "{e}");
    let e = model.evaluate(&[vec![2, 3]], &[1]).unwrap_err().to_string();
    assert!(e.contains("cannot be trained by the harness"), "{e}");
}
