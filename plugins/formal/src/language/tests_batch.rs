//! The batched HMM forward pass (`Language::score_batch`): bit for bit the one-sequence
//! `Language::score` (same operations in the same order, see `hmm/batch.rs`), and equal to a
//! brute-force sum over every hidden path on a tiny HMM.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::SEED;
use super::*;

/// Asserts `score_batch` equals `score` of each sequence, `log_prob` compared bit for bit.
/// Returns the batch's scores.
fn assert_batch_equals_single(
    name: &str,
    lang: &Language,
    seqs: &[Vec<u32>],
) -> Vec<SequenceScore> {
    let batch = lang.score_batch(seqs).unwrap();
    assert_eq!(batch.len(), seqs.len(), "{name}");
    // The same pass with 1 and 8 lanes (pulp's portable emulations): other tile widths, and
    // other tails of states left to the scalar loop.
    if let Model::Hmm(hmm) = &lang.model {
        let xs: Vec<&[u32]> = seqs.iter().map(|x| x.as_slice()).collect();
        assert_eq!(
            hmm.score_batch_with(pulp::Scalar::new(), &xs),
            batch,
            "{name}, 1 lane"
        );
        assert_eq!(
            hmm.score_batch_with(pulp::Scalar512b, &xs),
            batch,
            "{name}, 8 lanes"
        );
    }
    for (k, (x, b)) in seqs.iter().zip(&batch).enumerate() {
        let one = lang.score(x).unwrap();
        assert_eq!(
            b.log_prob.to_bits(),
            one.log_prob.to_bits(),
            "{name}, sequence {k} (length {}): batched {} vs one-sequence {}",
            x.len(),
            b.log_prob,
            one.log_prob
        );
        assert_eq!(b, &one, "{name}, sequence {k}");
    }
    batch
}

/// Sequences of the language (lengths 1..=`max_len`, drawn, so the order is ragged) and
/// uniformly random ones (mostly outside a pruned support: exercises the restarts).
fn mixed_sequences(
    lang: &Language,
    n: usize,
    max_len: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<u32>> {
    (0..n)
        .map(|k| {
            let len = rng.random_range(1..=max_len);
            if k % 3 == 0 {
                (0..len)
                    .map(|_| rng.random_range(0..lang.vocab() as u32))
                    .collect()
            } else {
                lang.sample(len, rng).unwrap()
            }
        })
        .collect()
}

#[test]
fn batched_scores_are_bit_identical_to_one_sequence_scores() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // Table 1's HMM (32 states: whole SIMD tiles), and state counts that leave a scalar tail
    // of states (5, 37) or are smaller than one tile (1, 3).
    let mut langs: Vec<(String, Language)> = [Variant::Ser, Variant::Ter]
        .into_iter()
        .map(|v| (format!("hmm/{v}"), table1("hmm", v, SEED).unwrap()))
        .collect();
    for (states, threshold) in [(1, 0.0), (3, 0.05), (5, 0.02), (37, 0.003)] {
        let lang = Language::hmm(states, 6, 3.2, threshold, SEED + states as u64).unwrap();
        langs.push((format!("hmm-{states}"), lang));
    }
    // Transitions of 1e-60: two steps later a state holds 1e-120 of the maximum, below the
    // scaled pass's floor, so that pass gives up and the sequence is rescored in log space.
    let tiny = vec![
        vec![1.0, 1e-60, 0.0],
        vec![0.0, 1.0, 1e-60],
        vec![0.0, 0.0, 1.0],
    ];
    let flat = vec![vec![0.5, 0.5]; 3];
    let guarded = Language::from_hmm_tables(2, &[1.0, 0.0, 0.0], &tiny, &flat).unwrap();
    langs.push(("hmm with 1e-60 transitions".into(), guarded));
    let mut hmm_scores = Vec::new();
    for (name, lang) in &langs {
        // 150 sequences: more than one chunk of 64 rows, and an odd number of rows.
        let seqs = mixed_sequences(lang, 150, 60, &mut rng);
        hmm_scores.extend(assert_batch_equals_single(name, lang, &seqs));
        // Long sequences, where the scale factors matter most.
        let long: Vec<Vec<u32>> = (0..9)
            .map(|_| lang.sample(512, &mut rng).unwrap())
            .collect();
        assert_batch_equals_single(name, lang, &long);
    }
    // The other kinds score one sequence at a time, through the same entry point.
    for lang in [
        table1("4-gram", Variant::Ser, SEED).unwrap(),
        Language::interval(16, 8, 2).unwrap(),
    ] {
        let seqs = mixed_sequences(&lang, 20, 40, &mut rng);
        let seqs: Vec<Vec<u32>> = seqs
            .into_iter()
            .filter(|x| x.len() >= lang.min_length())
            .collect();
        assert_batch_equals_single(&lang.kind_label(), &lang, &seqs);
    }
    // The restarts after impossible positions were exercised, and so were sequences without.
    let restarts = hmm_scores
        .iter()
        .filter(|s| s.invalid_transitions > 1)
        .count();
    let in_support = hmm_scores.iter().filter(|s| s.in_support).count();
    assert!(restarts > 0 && in_support > 0, "{restarts} {in_support}");
    // A model forced into log space takes the log-space path for every sequence.
    let mut log_space = table1("hmm", Variant::Ser, SEED).unwrap();
    log_space.force_log_space();
    let seqs = mixed_sequences(&log_space, 40, 60, &mut rng);
    assert_batch_equals_single("hmm/ser, log space", &log_space, &seqs);
}

/// `q(x) = Σ_z init[z_0] e[z_0][x_0] Π_t T[z_{t-1}][z_t] e[z_t][x_t]` over all `H^L` paths.
fn path_sum(init: &[f64], trans: &[Vec<f64>], emit: &[Vec<f64>], x: &[u32]) -> f64 {
    let h = init.len();
    let mut total = 0.0;
    for code in 0..h.pow(x.len() as u32) {
        let z: Vec<usize> = (0..x.len()).map(|t| code / h.pow(t as u32) % h).collect();
        let mut p = init[z[0]] * emit[z[0]][x[0] as usize];
        for t in 1..x.len() {
            p *= trans[z[t - 1]][z[t]] * emit[z[t]][x[t] as usize];
        }
        total += p;
    }
    total
}

#[test]
fn batched_scores_match_enumeration_of_hidden_paths() {
    // 3 states over 2 tokens, with zeros in every table so that the support is pruned.
    let init = [0.5, 0.5, 0.0];
    let trans = vec![
        vec![0.0, 0.7, 0.3],
        vec![0.4, 0.0, 0.6],
        vec![0.0, 0.0, 1.0],
    ];
    let emit = vec![vec![1.0, 0.0], vec![0.2, 0.8], vec![0.0, 1.0]];
    let lang = Language::from_hmm_tables(2, &init, &trans, &emit).unwrap();
    let length = 7;
    let seqs: Vec<Vec<u32>> = (0..1u32 << length)
        .map(|c| (0..length).map(|t| c >> t & 1).collect())
        .collect();
    let scores = lang.score_batch(&seqs).unwrap();
    let mut total = 0.0;
    let mut outside = 0;
    for (x, s) in seqs.iter().zip(&scores) {
        let p = path_sum(&init, &trans, &emit, x);
        total += p;
        assert_eq!(s.in_support, p > 0.0, "{x:?}");
        if p > 0.0 {
            assert!(
                (s.log_prob - p.ln()).abs() < 1e-12,
                "{x:?}: {} vs {}",
                s.log_prob,
                p.ln()
            );
        } else {
            outside += 1;
            assert_eq!(s.log_prob, f64::NEG_INFINITY, "{x:?}");
        }
    }
    assert!((total - 1.0).abs() < 1e-12, "Σ q = {total}");
    assert!(outside > 0 && outside < seqs.len());
}

#[test]
fn batch_errors_name_the_sequence() {
    let lang = table1("hmm", Variant::Ser, SEED).unwrap();
    let seqs = vec![vec![0, 1], vec![2, 3], vec![1, 9, 0]];
    let err = lang.score_batch(&seqs).unwrap_err();
    assert!(matches!(err, LanguageError::InSequence { sequence: 2, .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with("sequence 2: token 9 at position 1 is out of range"),
        "{msg}"
    );
    let empty: Vec<Vec<u32>> = vec![vec![1], vec![]];
    let err = lang.score_batch(&empty).unwrap_err().to_string();
    assert!(
        err.starts_with("sequence 1: sequence length 0 is too short"),
        "{err}"
    );
    assert_eq!(lang.score_batch::<Vec<u32>>(&[]).unwrap(), vec![]);
}
