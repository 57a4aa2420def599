//! dlm-hf's side of the checkpoint-path comparison (issue 34, item 4): the same two timings as
//! `tools/perf/llada_reference.py` on the checkpoint folder it writes (8 layers, width 1024,
//! 32,768 embedding rows), on the flex (CPU) backend in f32:
//!
//! * `llada/forward/1x512` — one forward pass at batch 1 × 512 positions, logits read back to
//!   the host (the reference's `model(ids).logits` returns them in host memory);
//! * `llada/generate/64` — the SDK's `low_confidence` sampler (LLaDA's `generate`: temperature
//!   0, blocks of 32, full output row) on the same 256-token prompt, 256 tokens in 64 steps.
//!
//! Prints `NAME SECONDS` lines (medians) as the Python side does; `--answer-out FILE` writes the
//! generated answer's checkpoint ids (JSON) for `tools/perf/compare.sh` to hold against the
//! reference's. Run:
//!
//! `cargo run --release -p dlm-hf --example reference_speed -- DIR [--rounds N]
//!  [--generations N] [--answer-out FILE]`

use burn::tensor::{DType, Device};
use dlm_hf::Checkpoint;
use dlm_sdk::sampler::device::generate;
use dlm_sdk::{GenerateRequest, SamplerSpec};
use std::path::PathBuf;
use std::time::Instant;

const LENGTH: usize = 512;
const PROMPT: usize = 256;
const BLOCK: usize = 32;
const STEPS: usize = 64;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2.0
    }
}

fn main() -> Result<(), String> {
    let usage = "usage: reference_speed DIR [--rounds N] [--generations N] [--answer-out FILE]";
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or(usage)?);
    let (mut rounds, mut generations, mut answer_out) = (5usize, 1usize, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(usage)?;
        match flag.as_str() {
            "--rounds" => rounds = value.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--generations" => {
                generations = value.parse().map_err(|e| format!("--generations: {e}"))?
            }
            "--answer-out" => answer_out = Some(PathBuf::from(value)),
            _ => return Err(usage.into()),
        }
    }
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let ckpt = Checkpoint::open(&dir, &Device::flex(), "cpu", DType::F32, None)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    // The reference's decoder reads the whole output row.
    let mut denoiser = ckpt.denoiser.with_full_row(true);
    let mask = denoiser.sampler_vocab() as u32;
    let prompt: Vec<u32> = (0..PROMPT as u32).map(|i| (7 * i) % 480).collect();
    let mut canvas = prompt.clone();
    canvas.resize(LENGTH, mask);
    let ids = denoiser
        .checkpoint_ids(&canvas)
        .map_err(|e| e.to_string())?;

    let forward = |denoiser: &dlm_hf::CheckpointDenoiser| {
        let net = &denoiser.net;
        let logits = net.forward(net.ids_tensor(&ids, 1, LENGTH).unwrap());
        let _ = logits.into_data();
    };
    forward(&denoiser); // warm-up
    let times = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            forward(&denoiser);
            started.elapsed().as_secs_f64()
        })
        .collect();
    println!("llada/forward/1x{LENGTH} {:.6}", median(times));
    if generations == 0 {
        return Ok(()); // `--generations 0`: the forward only
    }

    let request = GenerateRequest {
        batch_size: 1,
        length: LENGTH,
        sampler: SamplerSpec {
            name: "low_confidence".into(),
            steps: STEPS,
            schedule: None,
            params: serde_json::from_value(
                serde_json::json!({"temperature": 0.0, "block_length": BLOCK}),
            )
            .map_err(|e| e.to_string())?,
        },
        seed: 0,
        first_index: 0,
        prompts: Some(vec![prompt]),
        prompt_texts: None,
        trace: false,
    };
    let mut times = Vec::new();
    let mut answer = Vec::new();
    for _ in 0..generations {
        let started = Instant::now();
        let (sequences, _) = generate(&mut denoiser, &request).map_err(|e| e.to_string())?;
        times.push(started.elapsed().as_secs_f64());
        let row = denoiser
            .checkpoint_ids(&sequences[0])
            .map_err(|e| e.to_string())?;
        answer = row[PROMPT..].to_vec();
    }
    println!("llada/generate/{STEPS} {:.6}", median(times));
    if let Some(path) = answer_out {
        let text = serde_json::to_string(&answer).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    eprintln!(
        "# flex, answer's first ids {:?}",
        &answer[..8.min(answer.len())]
    );
    Ok(())
}
