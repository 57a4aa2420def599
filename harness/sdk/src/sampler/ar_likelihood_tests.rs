//! The exact log-likelihood of an autoregressive model (`ar::exact_autoregressive`) against the
//! test chain's closed form.

use super::tests::{ChainAr, ChainOracle};

fn chain_log_p(chain: &ChainOracle, context: &[u32], continuation: &[u32]) -> f64 {
    let v = chain.vocab;
    let x: Vec<u32> = context.iter().chain(continuation).copied().collect();
    (context.len()..x.len())
        .map(|j| match j {
            0 => chain.init[x[0] as usize].ln(),
            _ => chain.trans[x[j - 1] as usize * v + x[j] as usize].ln(),
        })
        .sum()
}

/// An autoregressive model answers exactly, rows of different lengths in one request.
#[test]
fn an_autoregressive_model_answers_exactly() {
    let chain = ChainOracle::full();
    let rows = vec![
        (vec![], vec![0u32, 1, 2]),
        (vec![2u32, 2], vec![1u32]),
        (vec![1u32], vec![0u32, 0]),
    ];
    let mut ar = ChainAr {
        chain: ChainOracle::full(),
        last: Vec::new(),
        calls: 0,
    };
    let values = super::exact_autoregressive(&mut ar, &rows).unwrap();
    for ((c, k), v) in rows.iter().zip(values) {
        assert!((v - chain_log_p(&chain, c, k)).abs() < 1e-12);
    }
}
