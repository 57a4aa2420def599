//! The parallel-decoding tasks: configuration, prompts, reference answers, exact scoring and
//! the exact conditional distribution of the answer positions.
//!
//! Every task is a text task in a small vocabulary: the letters `a`, `b`, … of the alphabet,
//! `=`, and (`line` only) the counts `0` … `n` as single tokens, then end-of-text. A prompt is
//! a fixed number of tokens ending in `=` ([`Spec::prompt_len`]); the answer is the next `n`
//! letters, and every later position is end-of-text. The answer's distribution is uniform
//! over the valid answers:
//!
//! | task | prompt | valid answers |
//! |---|---|---|
//! | `copy` | `n` letters `x`, `=` | `x` |
//! | `reverse` | `n` letters `x`, `=` | `x` reversed |
//! | `sort` | `n` letters `x`, `=` | `x` sorted |
//! | `replace_one` | `n` letters `x`, `=` | `x` with exactly one letter replaced by another (`n·(A−1)` answers) |
//! | `shuffle` | `n` distinct letters `x`, `=` | any permutation of `x` (`n!` answers) |
//! | `line` | `a3b1c4=`: a count per letter | any line of the `n` people in which letter `s` appears `count_s` times (multinomial many answers) |
//!
//! Prompts are drawn from `(seed, index)`: i.i.d. uniform letters (`shuffle`: `n` distinct
//! letters, so the alphabet must have at least `n`; `line`: the counts of `n` i.i.d. uniform
//! letters).

use dlm_sdk::sampler::sample_rng;
use dlm_sdk::{fnv1a_64, PluginError, Result};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::Deserialize;
use serde_json::{json, Value};

/// Task components of the plugin.
pub const TASKS: &[&str] = &["copy", "reverse", "replace_one", "sort", "shuffle", "line"];

/// Largest answer length: the closed forms enumerate count vectors and step schedules.
pub const MAX_N: usize = 32;
/// Largest alphabet (the letters `a`…`z`); `line` allows at most [`MAX_LINE_ALPHABET`].
pub const MAX_ALPHABET: usize = 26;
/// `line`'s closed form runs over every count vector: few letters keep it instant.
pub const MAX_LINE_ALPHABET: usize = 4;

/// Stream tags: prompts and reference answers never share a stream with a model's samples.
const PROMPT_STREAM: u64 = 0x9A7A_0000_0000_0000;
const REFERENCE_STREAM: u64 = 0x9A7B_0000_0000_0000;

/// Which task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Copy,
    Reverse,
    ReplaceOne,
    Sort,
    Shuffle,
    Line,
}

impl Kind {
    fn of(task: &str) -> Result<Kind> {
        Ok(match task {
            "copy" => Kind::Copy,
            "reverse" => Kind::Reverse,
            "replace_one" => Kind::ReplaceOne,
            "sort" => Kind::Sort,
            "shuffle" => Kind::Shuffle,
            "line" => Kind::Line,
            other => {
                return Err(PluginError::bad_config(format!(
                    "plugin `dlm-parallel` has no task `{other}`; tasks: {}",
                    TASKS.join(", ")
                )))
            }
        })
    }

    /// The task's component name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Copy => "copy",
            Kind::Reverse => "reverse",
            Kind::ReplaceOne => "replace_one",
            Kind::Sort => "sort",
            Kind::Shuffle => "shuffle",
            Kind::Line => "line",
        }
    }

    /// The answer is a function of the prompt (accuracy 1 at every number of steps).
    pub fn deterministic(self) -> bool {
        matches!(self, Kind::Copy | Kind::Reverse | Kind::Sort)
    }
}

/// A task's configuration as a suite writes it (every key optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Answer length in letters (default 8).
    #[serde(default)]
    pub n: Option<usize>,
    /// Alphabet size (default: `n` for `shuffle`, 3 for `line`, 4 otherwise).
    #[serde(default)]
    pub alphabet: Option<usize>,
    /// Mixed into the prompt stream, so two tasks of one suite can have different prompts.
    #[serde(default)]
    pub seed: u64,
}

/// A task with its configuration resolved and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub kind: Kind,
    pub n: usize,
    pub alphabet: usize,
    pub seed: u64,
}

/// One prompt: the letters of `x` (`line`: the count of each letter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub input: Vec<usize>,
}

impl Spec {
    /// The task `task` under `config` (`null`: every default).
    pub fn new(task: &str, config: &Value) -> Result<Spec> {
        let kind = Kind::of(task)?;
        let config: Config = if config.is_null() {
            Config::default()
        } else {
            serde_json::from_value(config.clone()).map_err(|e| {
                PluginError::bad_config(format!(
                    "invalid `{task}` task config: {e} (keys: n, alphabet, seed)"
                ))
            })?
        };
        let n = config.n.unwrap_or(8);
        if !(1..=MAX_N).contains(&n) {
            return Err(PluginError::bad_config(format!(
                "`{task}`: `n` must be in 1..={MAX_N} (got {n})"
            )));
        }
        let alphabet = config.alphabet.unwrap_or(match kind {
            Kind::Shuffle => n.max(2),
            Kind::Line => 3,
            _ => 4,
        });
        let max = if kind == Kind::Line {
            MAX_LINE_ALPHABET
        } else {
            MAX_ALPHABET
        };
        if !(2..=max).contains(&alphabet) {
            return Err(PluginError::bad_config(format!(
                "`{task}`: `alphabet` must be in 2..={max} (got {alphabet})"
            )));
        }
        if kind == Kind::Shuffle && alphabet < n {
            return Err(PluginError::bad_config(format!(
                "`shuffle` draws n = {n} distinct letters, so `alphabet` must be at least {n} (got {alphabet}); raise `alphabet` or lower `n`"
            )));
        }
        Ok(Spec {
            kind,
            n,
            alphabet,
            seed: config.seed,
        })
    }

    /// The vocabulary's pieces in id order (end-of-text is the next id, the mask the one after).
    pub fn vocabulary(&self) -> Vec<String> {
        let mut pieces: Vec<String> = (0..self.alphabet).map(|s| letter(s).to_string()).collect();
        pieces.push("=".into());
        if self.kind == Kind::Line {
            pieces.extend((0..=self.n).map(|k| k.to_string()));
        }
        pieces
    }

    /// Id of `=`.
    pub fn equals(&self) -> u32 {
        self.alphabet as u32
    }

    /// Id of the count `k` (`line`).
    fn count_id(&self, k: usize) -> u32 {
        (self.alphabet + 1 + k) as u32
    }

    /// Id of end-of-text.
    pub fn eos(&self) -> u32 {
        self.vocabulary().len() as u32
    }

    /// Tokens of every prompt.
    pub fn prompt_len(&self) -> usize {
        match self.kind {
            Kind::Line => 2 * self.alphabet + 1,
            _ => self.n + 1,
        }
    }

    /// Shortest sequence that holds a prompt and its answer. A model the harness trains needs
    /// one more position, an end-of-text to learn where the answer stops (the harness says so
    /// when it builds the training sequences).
    pub fn min_length(&self) -> usize {
        self.prompt_len() + self.n
    }

    /// The prompt of sample `index` under the cell's `seed`.
    pub fn problem(&self, seed: u64, index: u64) -> Problem {
        let key = fnv1a_64(
            seed.to_le_bytes()
                .into_iter()
                .chain(self.seed.to_le_bytes()),
        );
        let mut rng = sample_rng(key, PROMPT_STREAM | index);
        let input = match self.kind {
            Kind::Shuffle => {
                let mut letters: Vec<usize> = (0..self.alphabet).collect();
                letters.shuffle(&mut rng);
                letters.truncate(self.n);
                letters
            }
            Kind::Line => {
                let mut counts = vec![0; self.alphabet];
                for _ in 0..self.n {
                    counts[rng.random_range(0..self.alphabet)] += 1;
                }
                counts
            }
            _ => (0..self.n)
                .map(|_| rng.random_range(0..self.alphabet))
                .collect(),
        };
        Problem { input }
    }

    /// The prompt as token ids.
    pub fn prompt_tokens(&self, p: &Problem) -> Vec<u32> {
        let mut ids: Vec<u32> = match self.kind {
            Kind::Line => p
                .input
                .iter()
                .enumerate()
                .flat_map(|(s, &c)| [s as u32, self.count_id(c)])
                .collect(),
            _ => p.input.iter().map(|&s| s as u32).collect(),
        };
        ids.push(self.equals());
        ids
    }

    /// The prompt as text.
    pub fn prompt_text(&self, p: &Problem) -> String {
        let pieces = self.vocabulary();
        self.prompt_tokens(p)
            .iter()
            .map(|&t| pieces[t as usize].as_str())
            .collect()
    }

    /// The prompt a row of token ids starts with; `None` when it is not one of this task's.
    pub fn parse_prompt(&self, tokens: &[u32]) -> Option<Problem> {
        let len = self.prompt_len();
        if tokens.len() < len || tokens[len - 1] != self.equals() {
            return None;
        }
        let letter_of = |t: u32| ((t as usize) < self.alphabet).then_some(t as usize);
        let input = match self.kind {
            Kind::Line => {
                let mut counts = Vec::with_capacity(self.alphabet);
                for (s, pair) in tokens[..len - 1].chunks(2).enumerate() {
                    let count = (pair[1] as usize).checked_sub(self.alphabet + 1)?;
                    if pair[0] as usize != s || count > self.n {
                        return None;
                    }
                    counts.push(count);
                }
                (counts.iter().sum::<usize>() == self.n).then_some(counts)?
            }
            _ => tokens[..len - 1]
                .iter()
                .map(|&t| letter_of(t))
                .collect::<Option<Vec<_>>>()?,
        };
        Some(Problem { input })
    }

    /// How many times each letter must appear in the answer (`shuffle`, `line`).
    pub fn multiset(&self, p: &Problem) -> Vec<usize> {
        match self.kind {
            Kind::Line => p.input.clone(),
            _ => {
                let mut counts = vec![0; self.alphabet];
                for &s in &p.input {
                    counts[s] += 1;
                }
                counts
            }
        }
    }

    /// The answer of a deterministic task.
    pub fn target(&self, p: &Problem) -> Vec<usize> {
        let mut t = p.input.clone();
        match self.kind {
            Kind::Reverse => t.reverse(),
            Kind::Sort => t.sort_unstable(),
            _ => {}
        }
        t
    }

    /// A valid answer drawn uniformly (the reference completion, and training data).
    pub fn reference(&self, p: &Problem, seed: u64, index: u64) -> Vec<usize> {
        let mut rng = sample_rng(seed, REFERENCE_STREAM | index);
        match self.kind {
            Kind::ReplaceOne => {
                let mut a = p.input.clone();
                let i = rng.random_range(0..self.n);
                let other = rng.random_range(0..self.alphabet - 1);
                a[i] = if other >= a[i] { other + 1 } else { other };
                a
            }
            Kind::Shuffle | Kind::Line => {
                let mut a: Vec<usize> = self
                    .multiset(p)
                    .iter()
                    .enumerate()
                    .flat_map(|(s, &c)| std::iter::repeat_n(s, c))
                    .collect();
                a.shuffle(&mut rng);
                a
            }
            _ => self.target(p),
        }
    }

    /// Whether `answer` (letters) is a valid answer to `p`.
    pub fn is_correct(&self, p: &Problem, answer: &[usize]) -> bool {
        if answer.len() != self.n {
            return false;
        }
        match self.kind {
            Kind::ReplaceOne => answer.iter().zip(&p.input).filter(|(a, x)| a != x).count() == 1,
            Kind::Shuffle | Kind::Line => {
                let mut counts = vec![0; self.alphabet];
                for &s in answer {
                    counts[s] += 1;
                }
                counts == self.multiset(p)
            }
            _ => answer == self.target(p).as_slice(),
        }
    }

    /// Letters of a completion text; `None` if it holds anything else (a mask mark, `=`, …).
    pub fn parse_answer(&self, text: &str) -> Option<Vec<usize>> {
        text.chars()
            .map(|c| {
                let s = (c as u32).checked_sub('a' as u32)? as usize;
                (s < self.alphabet).then_some(s)
            })
            .collect()
    }

    /// The exact conditional distribution over the letters of every answer slot (`None`:
    /// masked) given the prompt and the committed slots, under the uniform distribution over
    /// valid answers. Rows of committed slots are their own letter (or uniform for a non-letter).
    ///
    /// Where the committed slots already rule every valid answer out (parallel steps committed
    /// an impossible combination), the exact conditional does not exist; the oracle then
    /// answers with the closest thing that is defined, which cannot change the sample's
    /// verdict: `replace_one` copies the prompt, `shuffle` and `line` draw from the letters
    /// the answer still lacks (every letter of the prompt if none).
    pub fn conditional(&self, p: &Problem, slots: &[Option<u32>]) -> Vec<Vec<f64>> {
        let a = self.alphabet;
        let one_hot = |s: usize| {
            let mut row = vec![0.0; a];
            row[s] = 1.0;
            row
        };
        let masked = slots.iter().filter(|s| s.is_none()).count();
        let letter_of = |t: u32| ((t as usize) < a).then_some(t as usize);
        let committed_row = |t: u32| letter_of(t).map_or_else(|| vec![1.0 / a as f64; a], one_hot);
        let rows: Box<dyn Fn(usize) -> Vec<f64>> = match self.kind {
            Kind::Copy | Kind::Reverse | Kind::Sort => {
                let target = self.target(p);
                Box::new(move |j| one_hot(target[j]))
            }
            Kind::ReplaceOne => {
                let changed = slots
                    .iter()
                    .zip(&p.input)
                    .filter(|(s, &x)| s.is_some_and(|t| letter_of(t) != Some(x)))
                    .count();
                let x = p.input.clone();
                Box::new(move |j| {
                    if changed > 0 || masked == 0 {
                        return one_hot(x[j]);
                    }
                    // No change yet: it is at each masked slot with probability 1/r, to any
                    // of the other A − 1 letters alike.
                    let r = masked as f64;
                    let mut row = vec![1.0 / (r * (a - 1) as f64); a];
                    row[x[j]] = 1.0 - 1.0 / r;
                    row
                })
            }
            Kind::Shuffle | Kind::Line => {
                let mut left = self.multiset(p);
                for t in slots.iter().flatten() {
                    if let Some(s) = letter_of(*t) {
                        left[s] = left[s].saturating_sub(1);
                    }
                }
                if left.iter().sum::<usize>() == 0 {
                    left = self.multiset(p);
                }
                // Consistent: `left` sums to the masked count, and each masked slot holds
                // letter s with probability left_s / r (a uniform arrangement of `left`).
                let total = left.iter().sum::<usize>() as f64;
                let row: Vec<f64> = left.iter().map(|&c| c as f64 / total).collect();
                Box::new(move |_| row.clone())
            }
        };
        slots
            .iter()
            .enumerate()
            .map(|(j, s)| match s {
                None => rows(j),
                Some(t) => committed_row(*t),
            })
            .collect()
    }

    /// Facts for the report's task details.
    pub fn details(&self) -> Value {
        json!({
            "task": self.kind.name(),
            "n": self.n,
            "alphabet": self.alphabet,
            "seed": self.seed,
            "prompt_tokens": self.prompt_len(),
            "answer": "uniform over the valid answers",
        })
    }
}

/// The letter of symbol `s` (`a` = 0).
pub fn letter(s: usize) -> char {
    char::from(b'a' + s as u8)
}
