//! The sparse HMM ("The sparse HMM" in the module documentation) against brute force: every
//! sequence of length <= 6 with its probability summed over every hidden path by enumeration
//! (no forward recursion), Monte Carlo over uniform sequences for the support density at
//! larger `L`, and the relation of its tables to Table 1's HMM of the same seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::{brute_marginals, decode};
use super::*;

const SEED: u64 = 20250214;

/// The languages under test: the documented sparse HMM for two seeds and a small one
/// (5 states, vocab 3, at most 2 successors) whose enumeration reaches further.
fn sparse_languages() -> Vec<(String, Language)> {
    let small = SparseHmm {
        states: 5,
        vocab: 3,
        temperature: 2.0,
        threshold: 0.0,
        emission_threshold: 0.12,
        max_successors: 2,
    };
    vec![
        ("sparse/seed0".into(), table1_sparse_hmm(0).unwrap()),
        (
            "sparse/seed20250214".into(),
            table1_sparse_hmm(SEED).unwrap(),
        ),
        (
            "sparse-5/v3".into(),
            Language::sparse_hmm(&small, 7).unwrap(),
        ),
    ]
}

/// `q(x)` for every `x` of length `l` (index: `x` read as a base-`V` number), summed over all
/// hidden paths `z` of `init[z_0] E[z_0][x_0] Π_t T[z_{t-1}][z_t] E[z_t][x_t]` by depth-first
/// enumeration of (path, sequence) pairs. Only factors that are exactly zero are skipped, so
/// the sum is the definition of `q`, independent of the forward recursions under test.
fn brute_by_paths(lang: &Language, l: usize) -> Vec<f64> {
    let (v, h) = (lang.vocab(), lang.hidden_states().unwrap());
    let (init, trans, emit) = (
        lang.initial_distribution(),
        lang.transition_table(),
        lang.emission_table().unwrap(),
    );
    let mut q = vec![0.0; v.pow(l as u32)];
    fn rec(
        t: usize,
        l: usize,
        z: usize,
        p: f64,
        code: usize,
        q: &mut [f64],
        tabs: (&[f64], &[f64], usize, usize),
    ) {
        let (trans, emit, h, v) = tabs;
        for x in 0..v {
            let pe = p * emit[z * v + x];
            if pe == 0.0 {
                continue;
            }
            let c = code * v + x;
            if t + 1 == l {
                q[c] += pe;
                continue;
            }
            for z2 in 0..h {
                let pt = pe * trans[z * h + z2];
                if pt != 0.0 {
                    rec(t + 1, l, z2, pt, c, q, tabs);
                }
            }
        }
    }
    for (z, &p) in init.iter().enumerate() {
        if p > 0.0 {
            rec(0, l, z, p, 0, &mut q, (trans, emit, h, v));
        }
    }
    q
}

fn max_len(lang: &Language) -> usize {
    if lang.vocab() == 3 {
        9
    } else {
        6
    }
}

/// The transition rows really are sparse, the draws are Table 1's, and nothing else changed.
#[test]
fn sparse_hmm_tables_are_table1_draws_with_sparse_transitions() {
    let p = SparseHmm::default();
    assert_eq!(
        (
            p.states,
            p.vocab,
            p.temperature,
            p.threshold,
            p.emission_threshold,
            p.max_successors
        ),
        (32, 8, 3.2, 0.003, 0.05, 4)
    );
    for seed in [0, 1, SEED] {
        let sparse = table1_sparse_hmm(seed).unwrap();
        let ser = table1("hmm", Variant::Ser, seed).unwrap();
        let ter = table1("hmm", Variant::Ter, seed).unwrap();
        assert_eq!(sparse.sparse_params(), Some(&p));
        assert!(ser.sparse_params().is_none() && ter.sparse_params().is_none());
        assert_eq!(
            (sparse.kind_label(), sparse.threshold(), sparse.seed()),
            ("hmm-32".to_string(), Some(0.003), Some(seed))
        );
        // Initial distribution: Table 1's SER variant, unchanged.
        assert_eq!(sparse.initial_distribution(), ser.initial_distribution());
        // Transitions: the SER row restricted to its 4 largest entries, renormalised.
        let mut successors = 0;
        for (sr, tr) in sparse
            .transition_table()
            .chunks_exact(32)
            .zip(ser.transition_table().chunks_exact(32))
        {
            let nonzero = sr.iter().filter(|&&x| x > 0.0).count();
            let ser_nonzero = tr.iter().filter(|&&x| x > 0.0).count();
            assert_eq!(nonzero, ser_nonzero.min(4), "seed {seed}");
            successors += nonzero;
            let smallest_kept = sr
                .iter()
                .zip(tr)
                .filter(|(s, _)| **s > 0.0)
                .map(|(_, t)| *t)
                .fold(f64::INFINITY, f64::min);
            let kept: f64 = sr
                .iter()
                .zip(tr)
                .filter(|(s, _)| **s > 0.0)
                .map(|x| x.1)
                .sum();
            for (&s, &t) in sr.iter().zip(tr) {
                if s > 0.0 {
                    assert!((s - t / kept).abs() < 1e-12);
                } else {
                    assert!(
                        t <= smallest_kept,
                        "a dropped successor outranks a kept one"
                    );
                }
            }
            assert!((sr.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert!(successors <= 4 * 32 && successors > 3 * 32, "{successors}");
        // Emissions: the TER row (threshold 0) pruned at 0.05, renormalised.
        for (sr, tr) in sparse
            .emission_table()
            .unwrap()
            .chunks_exact(8)
            .zip(ter.emission_table().unwrap().chunks_exact(8))
        {
            let kept: f64 = tr.iter().filter(|&&t| t >= 0.05).sum();
            for (&s, &t) in sr.iter().zip(tr) {
                let want = if t >= 0.05 { t / kept } else { 0.0 };
                assert!((s - want).abs() < 1e-12, "seed {seed}: {s} vs {want}");
            }
        }
        // Same seed, same language; another seed, another one.
        let again = table1_sparse_hmm(seed).unwrap();
        assert_eq!(sparse.transition_table(), again.transition_table());
        assert_ne!(
            sparse.transition_table(),
            table1_sparse_hmm(seed + 1000).unwrap().transition_table()
        );
    }
    // max_successors = H and emission_threshold = threshold give back Table 1's HMM exactly.
    let unlimited = Language::sparse_hmm(
        &SparseHmm {
            emission_threshold: 0.003,
            max_successors: 32,
            ..p
        },
        SEED,
    )
    .unwrap();
    let ser = table1("hmm", Variant::Ser, SEED).unwrap();
    assert_eq!(unlimited.transition_table(), ser.transition_table());
    assert_eq!(unlimited.emission_table(), ser.emission_table());
    // Invalid parameters are errors, not panics.
    for bad in [
        SparseHmm {
            max_successors: 0,
            ..p
        },
        SparseHmm {
            max_successors: 33,
            ..p
        },
        SparseHmm {
            emission_threshold: 1.0,
            ..p
        },
        SparseHmm {
            emission_threshold: f64::NAN,
            ..p
        },
        SparseHmm { states: 0, ..p },
        SparseHmm {
            emission_threshold: 0.9,
            ..p
        },
    ] {
        assert!(Language::sparse_hmm(&bad, 0).is_err(), "{bad:?}");
    }
    let e = Language::sparse_hmm(
        &SparseHmm {
            max_successors: 0,
            ..p
        },
        0,
    )
    .unwrap_err();
    assert_eq!(
        e,
        LanguageError::InvalidMaxSuccessors {
            max_successors: 0,
            states: 32
        }
    );
}

/// Every sequence of every length up to 6 (9 for the small one): the exact score agrees with
/// the sum over hidden paths, the probabilities sum to one, the zero-probability sequences are
/// exactly those the support check rejects, and the support density is the brute-force share.
#[test]
fn sparse_hmm_exact_scoring_matches_sum_over_hidden_paths() {
    for (name, lang) in sparse_languages() {
        let mut slow = lang.clone();
        slow.force_log_space();
        let v = lang.vocab();
        let mut zero_seen = false;
        for l in 1..=max_len(&lang) {
            let q = brute_by_paths(&lang, l);
            let total: f64 = q.iter().sum();
            assert!((total - 1.0).abs() < 1e-12, "{name} L={l}: Σ q = {total}");
            let mut total_scored = 0.0;
            let mut in_support = 0usize;
            for (i, &p) in q.iter().enumerate() {
                let x = decode(i, v, l);
                let s = lang.score(&x).unwrap();
                assert_eq!(s.in_support, p > 0.0, "{name} {x:?}: q = {p}");
                assert_eq!(s.invalid_transitions == 0, p > 0.0, "{name} {x:?}");
                assert_eq!(s.first_invalid.is_none(), p > 0.0, "{name} {x:?}");
                if p > 0.0 {
                    in_support += 1;
                    assert!(
                        (s.log_prob - p.ln()).abs() < 1e-9,
                        "{name} {x:?}: {} vs {}",
                        s.log_prob,
                        p.ln()
                    );
                } else {
                    assert_eq!(s.log_prob, f64::NEG_INFINITY, "{name} {x:?}");
                }
                total_scored += s.log_prob.exp();
                if i % 11 == 0 {
                    assert_eq!(slow.score(&x).unwrap().in_support, p > 0.0);
                    let ls = slow.log_prob(&x).unwrap();
                    assert!(ls == s.log_prob || (ls - s.log_prob).abs() < 1e-9);
                }
            }
            assert!((total_scored - 1.0).abs() < 1e-9, "{name} L={l}");
            zero_seen |= in_support < q.len();
            let brute = (in_support as f64 / q.len() as f64).log10();
            let got = lang.support_log10_density(l).unwrap();
            assert!(
                (got - brute).abs() < 1e-12,
                "{name} L={l}: density {got} vs brute {brute}"
            );
            // Exact entropy by the prefix tree against -Σ q ln q.
            let h: f64 = -q
                .iter()
                .filter(|&&p| p > 0.0)
                .map(|p| p * p.ln())
                .sum::<f64>();
            let e = lang.entropy(l).unwrap();
            assert!(
                e.exact && (e.nats - h).abs() < 1e-9 * h.max(1.0),
                "{name} L={l}"
            );
        }
        assert!(zero_seen, "{name}: no sequence pruned");
        // The support shrinks: strictly below 1 at the largest enumerated length.
        assert!(lang.support_log10_density(max_len(&lang)).unwrap() < -0.05);
    }
}

/// Conditional marginals (scaled and log space) against brute force from the path sums, for
/// sampled, partly masked, fully masked and out-of-support-but-consistent masked sequences,
/// and inconsistent ones reported as such.
#[test]
fn sparse_hmm_conditional_marginals_match_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for (name, lang) in sparse_languages() {
        let (v, l) = (lang.vocab(), if lang.vocab() == 3 { 7 } else { 5 });
        let mask = lang.mask_id();
        let table: Vec<(Vec<u32>, f64)> = brute_by_paths(&lang, l)
            .into_iter()
            .enumerate()
            .map(|(i, p)| (decode(i, v, l), p))
            .collect();
        let mut seqs: Vec<Vec<u32>> = Vec::new();
        for rate in [0.0, 1.0, 0.3, 0.5, 0.7, 0.9, 0.2, 0.6] {
            let x = lang.sample(l, &mut rng).unwrap();
            seqs.push(
                x.iter()
                    .map(|&t| if rng.random::<f64>() < rate { mask } else { t })
                    .collect(),
            );
        }
        // Uniformly random sequences, half masked, kept when some completion is in the support.
        let mut consistent_random = 0;
        for _ in 0..2000 {
            let (x, _) = &table[rng.random_range(0..table.len())];
            let m: Vec<u32> = x
                .iter()
                .map(|&t| if rng.random::<f64>() < 0.5 { mask } else { t })
                .collect();
            if brute_marginals(&table, &m, v).is_some() {
                seqs.push(m);
                consistent_random += 1;
                if consistent_random == 4 {
                    break;
                }
            }
        }
        let mut slow = lang.clone();
        slow.force_log_space();
        let batch = seqs.len();
        let tokens = seqs.concat();
        for (mode, engine) in [("scaled", &lang), ("log space", &slow)] {
            let mut out = vec![0.0; batch * l * v];
            engine
                .conditional_marginals(&tokens, batch, l, &mut out)
                .unwrap();
            for (b, masked) in seqs.iter().enumerate() {
                let brute = brute_marginals(&table, masked, v).unwrap();
                for (i, (g, e)) in out[b * l * v..(b + 1) * l * v]
                    .iter()
                    .zip(&brute)
                    .enumerate()
                {
                    assert!(
                        (g - e).abs() < 1e-9,
                        "{name} {mode} {masked:?} pos {} tok {}: {g} vs {e}",
                        i / v,
                        i % v
                    );
                    assert_eq!(*g == 0.0, *e == 0.0, "{name} {mode} zero pattern at {i}");
                }
            }
        }
        // A fully unmasked out-of-support sequence is inconsistent; its neighbours are not.
        let (bad, _) = table.iter().find(|(_, p)| *p == 0.0).unwrap();
        let good = vec![mask; l];
        let tokens = [good.clone(), bad.clone(), good].concat();
        let mut out = vec![0.0; 3 * l * v];
        assert_eq!(
            lang.conditional_marginals(&tokens, 3, l, &mut out),
            Err(LanguageError::Inconsistent {
                sequence: 1,
                count: 1
            }),
            "{name}"
        );
        assert!(out[l * v..2 * l * v].iter().all(|x| x.is_nan()));
        assert!(out[..l * v]
            .iter()
            .chain(&out[2 * l * v..])
            .all(|x| x.is_finite()));
    }
}

/// Measured support densities of the default sparse HMM, seed 0 (exact, subset construction):
/// strictly decreasing in `L`, between 1e-6 and 0.5 at `L = 64`, and confirmed at `L = 16` and
/// `L = 64` by the share of uniformly random sequences that the (independent) scoring accepts.
#[test]
fn sparse_hmm_support_density_falls_with_length() {
    let lang = table1_sparse_hmm(0).unwrap();
    let lengths = [8, 16, 32, 64, 128, 256, 512];
    let want = [-0.135, -0.301, -0.626, -1.274, -2.572, -5.168, -10.360];
    let got: Vec<f64> = lengths
        .iter()
        .map(|&l| lang.support_log10_density(l).unwrap())
        .collect();
    let one_step: Vec<f64> = lengths
        .iter()
        .map(|&l| lang.one_step_ser(l).unwrap().unwrap())
        .collect();
    println!("sparse HMM seed 0, L = {lengths:?}: log10 support density {got:?}, one-step SER {one_step:?}");
    assert!(one_step.windows(2).all(|w| w[1] > w[0]));
    for ((&l, &g), &w) in lengths.iter().zip(&got).zip(&want) {
        assert!((g - w).abs() < 1e-3, "L={l}: {g} vs recorded {w}");
    }
    assert!(got.windows(2).all(|w| w[1] < w[0]));
    let d64 = 10f64.powf(got[3]);
    assert!(d64 > 1e-6 && d64 < 0.5, "{d64}");
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for (l, log10_d) in [(16, got[1]), (64, got[3])] {
        let n = 20_000;
        let hits = (0..n)
            .filter(|_| {
                let x: Vec<u32> = (0..l).map(|_| rng.random_range(0..8)).collect();
                lang.score(&x).unwrap().in_support
            })
            .count();
        let p = 10f64.powf(log10_d);
        let se = (p * (1.0 - p) / n as f64).sqrt();
        let share = hits as f64 / n as f64;
        assert!(
            (share - p).abs() < 4.0 * se,
            "L={l}: share {share} vs exact {p} (SE {se})"
        );
    }
    // Other seeds: the support is pruned too (densities recorded in the module documentation).
    for seed in [1, 2, 3, SEED] {
        let d = table1_sparse_hmm(seed)
            .unwrap()
            .support_log10_density(64)
            .unwrap();
        assert!(d < -0.3 && d > -6.0, "seed {seed}: {d}");
    }
}

/// Long sequences: samples are in the support with finite log-probabilities, scaled and log
/// space agree, and the Monte Carlo entropy is in range.
#[test]
fn sparse_hmm_long_sequences() {
    let lang = table1_sparse_hmm(0).unwrap();
    let mut slow = lang.clone();
    slow.force_log_space();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for _ in 0..20 {
        let x = lang.sample(512, &mut rng).unwrap();
        let s = lang.score(&x).unwrap();
        assert!(s.in_support && s.log_prob.is_finite());
        assert!((s.log_prob - slow.log_prob(&x).unwrap()).abs() < 1e-8 * s.log_prob.abs());
    }
    let e = lang.entropy(64).unwrap();
    assert!(!e.exact && e.std_error > 0.0 && e.std_error <= 1e-3 * e.nats);
    assert!(e.nats > 0.0 && e.nats < 64.0 * 8f64.ln(), "{e:?}");
}

/// The exact one-step SER (independent draws from the all-masked marginals) against brute
/// force: `1 - Σ_{q(x) > 0} Π_t m_t(x_t)` with the marginals `m_t` summed from the path sums.
#[test]
fn sparse_hmm_one_step_ser_matches_brute_force() {
    for (name, lang) in sparse_languages() {
        let v = lang.vocab();
        for l in 1..=max_len(&lang).min(6) {
            let q = brute_by_paths(&lang, l);
            let mut m = vec![0.0; l * v];
            for (i, &p) in q.iter().enumerate() {
                for (t, &tok) in decode(i, v, l).iter().enumerate() {
                    m[t * v + tok as usize] += p;
                }
            }
            let inside: f64 = q
                .iter()
                .enumerate()
                .filter(|(_, &p)| p > 0.0)
                .map(|(i, _)| {
                    decode(i, v, l)
                        .iter()
                        .enumerate()
                        .map(|(t, &tok)| m[t * v + tok as usize])
                        .product::<f64>()
                })
                .sum();
            let got = lang.one_step_ser(l).unwrap().unwrap();
            assert!(
                (got - (1.0 - inside)).abs() < 1e-12,
                "{name} L={l}: {got} vs {}",
                1.0 - inside
            );
        }
    }
    let lang = table1_sparse_hmm(0).unwrap();
    let s64 = lang.one_step_ser(64).unwrap().unwrap();
    assert!(s64 > 0.5 && s64 < 1.0, "{s64}");
    // Table 1's SER HMM: full sequence support, so 0 up to rounding.
    let full = table1("hmm", Variant::Ser, 0).unwrap().one_step_ser(64);
    assert!(full.unwrap().unwrap().abs() < 1e-12);
    assert_eq!(
        table1("2-gram", Variant::Ser, 0).unwrap().one_step_ser(64),
        Ok(None)
    );
}
