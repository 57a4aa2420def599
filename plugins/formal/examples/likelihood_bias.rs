//! Bias and spread of the oracle's Monte-Carlo ELBO against the exact `log q(y | c)`, and the
//! multiple-choice agreement it implies, on Table 1's 2-gram and an HMM, for `mc_num` 1 … 128.
//!
//! `cargo run --release -p dlm-formal --example likelihood_bias`
//!
//! Rows: contexts of 4 tokens and continuations of 12 cut from the language's own samples.
//! Per `mc_num`: 20 repeated estimates (seeds) per row; bias = mean over rows of (mean over
//! repeats − exact), spread = root mean over rows of the variance over repeats. Multiple
//! choice: 4 continuations per context (the true one and three from other samples); gold is
//! the one the language prefers; agreement = share of items where the ELBO picks the gold.

use dlm_formal::language::{table1, Variant};
use dlm_formal::plugin::Oracle;
use dlm_sdk::likelihood::elbo;
use dlm_sdk::sampler::sample_rng;
use dlm_sdk::{DrawScheme, ElboSettings};

fn main() {
    let languages = [
        (
            "2-gram (Table 1, TER)",
            table1("2-gram", Variant::Ter, 0).unwrap(),
        ),
        (
            "hmm (32 states, TER)",
            table1("hmm", Variant::Ter, 0).unwrap(),
        ),
    ];
    let (context, continuation, rows, repeats, choices) = (4usize, 12usize, 16usize, 20u64, 4usize);
    for (name, language) in languages {
        let sample = |i: u64| {
            language
                .sample(context + continuation, &mut sample_rng(9, i))
                .unwrap()
        };
        let data: Vec<Vec<u32>> = (0..rows as u64 * choices as u64).map(sample).collect();
        let mut oracle = Oracle::from_language(language.clone(), None);
        println!("{name}: {rows} rows, context {context}, continuation {continuation}");
        println!("  mc_num   bias (nats)  spread  mean SE   MC agreement");
        for mc_num in [1usize, 2, 4, 8, 16, 32, 64, 128] {
            let settings = |seed| ElboSettings::new(mc_num, DrawScheme::Stratified, 16, seed);
            let (mut bias, mut var, mut se_sum, mut agree) = (0.0, 0.0, 0.0, 0usize);
            for r in 0..rows {
                let (c, y) = data[r].split_at(context);
                let exact = language.log_prob_continuation(c, y).unwrap();
                let est: Vec<(f64, f64)> = (0..repeats)
                    .map(|s| {
                        let e = elbo(&mut oracle, c, y, &settings(s), r as u64, None).unwrap();
                        (e.mean, e.std_error)
                    })
                    .collect();
                let m = est.iter().map(|e| e.0).sum::<f64>() / repeats as f64;
                bias += (m - exact) / rows as f64;
                var += est.iter().map(|e| (e.0 - m).powi(2)).sum::<f64>()
                    / (repeats - 1) as f64
                    / rows as f64;
                se_sum += est
                    .iter()
                    .map(|e| if e.1.is_finite() { e.1 } else { 0.0 })
                    .sum::<f64>()
                    / (repeats as usize * rows) as f64;
                // Multiple choice: the true continuation and those of other samples.
                let options: Vec<&[u32]> = (0..choices)
                    .map(|j| &data[(r + j * rows) % data.len()][context..])
                    .collect();
                let argmax = |score: &dyn Fn(&[u32]) -> f64| {
                    (0..choices)
                        .max_by(|&a, &b| score(options[a]).total_cmp(&score(options[b])))
                        .unwrap()
                };
                let gold = argmax(&|o| language.log_prob_continuation(c, o).unwrap());
                let mut oracle_for_choice = Oracle::from_language(language.clone(), None);
                let cell = std::cell::RefCell::new(&mut oracle_for_choice);
                let picked = argmax(&|o| {
                    elbo(*cell.borrow_mut(), c, o, &settings(1000), r as u64, None)
                        .unwrap()
                        .mean
                });
                agree += usize::from(picked == gold);
            }
            println!(
                "  {mc_num:>6}   {bias:>+10.4}  {:>6.3}  {se_sum:>7.3}   {agree}/{rows}",
                var.sqrt()
            );
        }
    }
}
