//! The closed forms and the oracle against brute force: every unmasking order, every draw.

use crate::closed_form::{self, line_accuracy_given};
use crate::plugin::{Oracle, ParallelTask};
use crate::task::{Problem, Spec, TASKS};
use dlm_sdk::sampler::quotas;
use dlm_sdk::{Completion, Denoiser, PromptsRequest, Task};
use serde_json::json;

fn spec(task: &str, n: usize, alphabet: usize) -> Spec {
    Spec::new(task, &json!({"n": n, "alphabet": alphabet})).unwrap()
}

/// Every `k`-subset of `items`.
fn subsets(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    if items.len() < k {
        return Vec::new();
    }
    let mut with: Vec<Vec<usize>> = subsets(&items[1..], k - 1)
        .into_iter()
        .map(|mut s| {
            s.insert(0, items[0]);
            s
        })
        .collect();
    with.extend(subsets(&items[1..], k));
    with
}

/// The probability that decoding ends in a valid answer, by enumeration: at each step every
/// equally likely set of positions (answer slots `0..n`, end-of-text slots after), and every
/// joint draw of its answer letters from the oracle's conditional rows before the step.
fn brute_force(spec: &Spec, p: &Problem, free: usize, steps: usize) -> f64 {
    fn go(
        spec: &Spec,
        p: &Problem,
        q: &[usize],
        slots: &mut Vec<Option<u32>>,
        eos_masked: usize,
    ) -> f64 {
        let masked: Vec<usize> = (0..spec.n)
            .filter(|&j| slots[j].is_none())
            .chain((0..eos_masked).map(|e| spec.n + e))
            .collect();
        if masked.is_empty() {
            let answer: Vec<usize> = slots.iter().map(|t| t.unwrap() as usize).collect();
            return f64::from(u8::from(spec.is_correct(p, &answer)));
        }
        let size = q[0].min(masked.len());
        let rows = spec.conditional(p, slots);
        let sets = subsets(&masked, size);
        let mut total = 0.0;
        for set in &sets {
            let answer_slots: Vec<usize> = set.iter().copied().filter(|&j| j < spec.n).collect();
            let eos_taken = set.len() - answer_slots.len();
            // Every joint draw of the step's letters, by odometer.
            let mut letters = vec![0usize; answer_slots.len()];
            loop {
                let prob: f64 = answer_slots
                    .iter()
                    .zip(&letters)
                    .map(|(&j, &s)| rows[j][s])
                    .product();
                if prob > 0.0 {
                    for (&j, &s) in answer_slots.iter().zip(&letters) {
                        slots[j] = Some(s as u32);
                    }
                    total += prob * go(spec, p, &q[1..], slots, eos_masked - eos_taken)
                        / sets.len() as f64;
                    for &j in &answer_slots {
                        slots[j] = None;
                    }
                }
                let Some(i) = letters.iter().position(|&s| s + 1 < spec.alphabet) else {
                    break;
                };
                letters[i] += 1;
                letters[..i].iter_mut().for_each(|s| *s = 0);
            }
        }
        total
    }
    let q = quotas(spec.n + free, steps);
    go(spec, p, &q, &mut vec![None; spec.n], free)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn closed_forms_equal_enumeration_of_orders_and_draws() {
    for (task, n, alphabet) in [
        ("copy", 4, 3),
        ("reverse", 4, 3),
        ("sort", 4, 3),
        ("replace_one", 4, 3),
        ("replace_one", 3, 2),
        ("shuffle", 4, 4),
        ("shuffle", 3, 5),
    ] {
        let s = spec(task, n, alphabet);
        let p = s.problem(0, 1);
        for free in [0, 1, 2] {
            for steps in 1..=n + free {
                let exact = brute_force(&s, &p, free, steps);
                let closed = closed_form::accuracy(&s, free, steps);
                assert!(
                    close(exact, closed),
                    "{task} n={n} A={alphabet} free={free} steps={steps}: enumeration {exact}, closed form {closed}"
                );
            }
        }
    }
}

#[test]
fn the_line_closed_form_equals_enumeration_per_prompt_and_over_prompts() {
    let s = spec("line", 4, 3);
    for counts in [vec![2, 1, 1], vec![4, 0, 0], vec![2, 2, 0], vec![0, 3, 1]] {
        let p = Problem {
            input: counts.clone(),
        };
        for free in [0, 1] {
            for steps in 1..=4 + free {
                let exact = brute_force(&s, &p, free, steps);
                let closed = line_accuracy_given(&counts, free, steps);
                assert!(
                    close(exact, closed),
                    "line {counts:?} free={free} steps={steps}: {exact} vs {closed}"
                );
            }
        }
    }
    // Over prompts: the counts of 3 uniform letters over 2, weighted as they are drawn.
    let s = spec("line", 3, 2);
    for steps in 1..=4 {
        let mut expected = 0.0;
        for (counts, ways) in [
            (vec![3, 0], 1.0),
            (vec![2, 1], 3.0),
            (vec![1, 2], 3.0),
            (vec![0, 3], 1.0),
        ] {
            expected += ways / 8.0 * brute_force(&s, &Problem { input: counts }, 1, steps);
        }
        let closed = closed_form::accuracy(&s, 1, steps);
        assert!(
            close(expected, closed),
            "steps {steps}: {expected} vs {closed}"
        );
    }
}

#[test]
fn closed_forms_at_the_extremes_match_their_textbook_values() {
    for n in [2usize, 5, 8] {
        let shuffle = spec("shuffle", n, n);
        let replace = spec("replace_one", n, 4);
        let n_f = n as f64;
        let factorial: f64 = (1..=n).map(|i| i as f64).product();
        // One step: every letter drawn at once from its all-masked marginal.
        assert!(close(
            closed_form::accuracy(&shuffle, 0, 1),
            factorial / n_f.powi(n as i32)
        ));
        assert!(close(
            closed_form::accuracy(&replace, 0, 1),
            (1.0 - 1.0 / n_f).powi(n as i32 - 1)
        ));
        // One token per step: the exact conditional never errs.
        for s in [&shuffle, &replace, &spec("line", n, 3)] {
            assert!(close(closed_form::accuracy(s, 1, n + 1), 1.0), "{s:?}");
        }
    }
    // A line of distinct letters is a shuffle.
    for steps in 1..=6 {
        assert!(close(
            line_accuracy_given(&[1, 1, 1, 1, 1], 1, steps),
            closed_form::accuracy(&spec("shuffle", 5, 5), 1, steps)
        ));
    }
}

/// The exact conditional by enumerating every valid answer that agrees with the committed slots.
fn enumerated_conditional(s: &Spec, p: &Problem, slots: &[Option<u32>]) -> Vec<Vec<f64>> {
    let mut rows = vec![vec![0.0; s.alphabet]; s.n];
    let mut total = 0.0;
    let count = s.alphabet.pow(s.n as u32);
    for code in 0..count {
        let answer: Vec<usize> = (0..s.n)
            .map(|j| code / s.alphabet.pow(j as u32) % s.alphabet)
            .collect();
        let agrees = slots
            .iter()
            .zip(&answer)
            .all(|(t, &a)| t.is_none_or(|t| t as usize == a));
        if agrees && s.is_correct(p, &answer) {
            total += 1.0;
            for (row, &a) in rows.iter_mut().zip(&answer) {
                row[a] += 1.0;
            }
        }
    }
    assert!(total > 0.0);
    rows.iter_mut()
        .for_each(|r| r.iter_mut().for_each(|x| *x /= total));
    rows
}

#[test]
fn the_oracle_is_the_exact_conditional_wherever_it_exists() {
    for task in TASKS {
        let s = spec(task, 4, if *task == "shuffle" { 5 } else { 3 });
        for index in 0..4 {
            let p = s.problem(7, index);
            let reference = s.reference(&p, 7, index);
            // Every pattern of committed slots taken from a valid answer (a consistent canvas).
            for pattern in 0..(1u32 << s.n) {
                let slots: Vec<Option<u32>> = (0..s.n)
                    .map(|j| (pattern >> j & 1 == 1).then_some(reference[j] as u32))
                    .collect();
                let got = s.conditional(&p, &slots);
                let want = enumerated_conditional(&s, &p, &slots);
                for j in (0..s.n).filter(|&j| slots[j].is_none()) {
                    for (g, w) in got[j].iter().zip(&want[j]) {
                        assert!(
                            close(*g, *w),
                            "{task} {p:?} {slots:?} slot {j}: {got:?} vs {want:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_oracle_denoiser_reads_its_prompt_and_puts_end_of_text_after_the_answer() {
    let s = spec("line", 4, 3);
    let p = s.problem(0, 3);
    let mut row = s.prompt_tokens(&p);
    let mask = (s.vocabulary().len() + 1) as u32;
    row.extend(std::iter::repeat_n(mask, s.n + 2));
    let mut oracle = Oracle::for_spec(s);
    let v = oracle.vocab_size();
    let mut out = vec![0.0; row.len() * v];
    oracle.denoise(&row, 1, row.len(), 1.0, &mut out).unwrap();
    let start = s.prompt_len();
    let letters: Vec<f64> = p.input.iter().map(|&c| c as f64 / 4.0).collect();
    assert_eq!(&out[start * v..start * v + 3], letters.as_slice());
    let last = row.len() - 1;
    assert_eq!(out[last * v + s.eos() as usize], 1.0);
    // A row that does not start with one of the task's prompts is refused, naming the row.
    let mut bad = row.clone();
    bad[start - 1] = 0;
    let e = oracle
        .denoise(&bad, 1, bad.len(), 1.0, &mut out)
        .unwrap_err();
    assert!(e.to_string().contains("row 0"), "{e}");
}

#[test]
fn references_are_correct_and_the_scorer_tells_right_from_wrong() {
    for task in TASKS {
        let alphabet = if *task == "line" { 3 } else { 5 };
        let mut t = ParallelTask::new(task, &json!({"n": 5, "alphabet": alphabet})).unwrap();
        let d = t.describe(40).unwrap();
        assert_eq!(d.closed_forms.len(), 1);
        // One value per number of steps, up to one step per completion position.
        let prompt = if *task == "line" { 2 * alphabet + 1 } else { 6 };
        assert_eq!(d.closed_forms[0].by_steps.len(), 40 - prompt);
        let prompts = t
            .prompts(&PromptsRequest {
                first_index: 0,
                n: 20,
                seed: 3,
            })
            .unwrap();
        let right: Vec<Completion> = prompts
            .iter()
            .map(|p| Completion {
                prompt_id: p.id.clone(),
                text: p.reference.clone().unwrap(),
            })
            .collect();
        for score in t.score_text(&right).unwrap() {
            assert!(score.in_support, "{task}");
        }
        // Wrong: a letter too many, a masked position, and (except where the answer may be
        // anything of the multiset) the prompt's letters changed at two places.
        let wrong: Vec<Completion> = prompts
            .iter()
            .flat_map(|p| {
                let r = p.reference.clone().unwrap();
                [format!("{r}a"), format!("\u{2591}{}", &r[1..])].map(|text| Completion {
                    prompt_id: p.id.clone(),
                    text,
                })
            })
            .collect();
        for score in t.score_text(&wrong).unwrap() {
            assert!(!score.in_support, "{task}");
        }
    }
}

#[test]
fn prompts_round_trip_and_bad_configs_are_named() {
    for task in TASKS {
        let s = spec(task, 6, if *task == "line" { 3 } else { 8 });
        for index in 0..10 {
            let p = s.problem(1, index);
            assert_eq!(s.parse_prompt(&s.prompt_tokens(&p)), Some(p));
        }
    }
    let e = Spec::new("shuffle", &json!({"n": 9, "alphabet": 4})).unwrap_err();
    assert!(e.to_string().contains("at least 9"), "{e}");
    let e = Spec::new("copy", &json!({"m": 9})).unwrap_err();
    assert!(e.to_string().contains("`m`"), "{e}");
    let e = Spec::new("unknown", &json!({})).unwrap_err();
    assert!(e.to_string().contains("tasks: copy"), "{e}");
    let e = ParallelTask::new("copy", &json!({"n": 8}))
        .unwrap()
        .describe(12)
        .unwrap_err();
    assert!(e.to_string().contains("at least 17"), "{e}");
}
