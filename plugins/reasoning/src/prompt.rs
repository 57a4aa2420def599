//! The two GSM8K prompt formats of lm-evaluation-harness, `gsm8k` and `gsm8k-cot`.
//!
//! Both lay out a prompt as lm-eval does without a chat template: each few-shot example is
//! `doc_to_text` + `target_delimiter` (`" "`) + its target + `fewshot_delimiter` (`"\n\n"`), and
//! the problem's own `doc_to_text` follows.
//!
//! | | `gsm8k` | `gsm8k-cot` |
//! |---|---|---|
//! | `doc_to_text` | `Question: {question}\nAnswer:` | `Q: {question}\nA:` |
//! | examples | the first `shots` train problems, target = the whole solution | the first `shots` of the 8 fixed [`COT_EXEMPLARS`] (Wei et al. 2022), target = the chain ending `The answer is n.` |
//! | default `shots` | 0 | 8 (lm-eval's `num_fewshot: 8`) |
//! | stop strings | `Question:`, `</s>`, `<|im_end|>` | `Q:`, `</s>`, `<|im_end|>` |
//! | strict-match | `#### n` | `The answer is n.` |
//! | reference | ` ` + the GSM8K solution | ` ` + the solution with its `#### n` line replaced by `The answer is n.` |
//!
//! flexible-extract is the same in both. The `gsm8k-cot` reference keeps the solution's
//! `<<expr=value>>` annotations, so a gold replay still checks every annotated step.

use crate::answer::StrictMatch;
use crate::data::Problem;
use crate::template::{Template, Templates, PLACEHOLDER};

/// A GSM8K prompt format (config key `format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PromptFormat {
    /// lm-eval's `gsm8k`: `Question: …\nAnswer:`, answers end `#### n`.
    #[default]
    Gsm8k,
    /// lm-eval's `gsm8k-cot`: `Q: …\nA:` after chain-of-thought exemplars, answers end
    /// `The answer is n.`.
    Gsm8kCot,
}

/// One `gsm8k-cot` few-shot exemplar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exemplar {
    /// The question (`question` in the yaml).
    pub question: &'static str,
    /// The chain of thought ending `The answer is n.` (`target` in the yaml).
    pub target: &'static str,
}

/// The 8 chain-of-thought exemplars of lm-eval's `gsm8k-cot` task, in order, from
/// `lm_eval/tasks/gsm8k/gsm8k-cot.yaml` (`fewshot_config.samples`, `sampler: first_n`) in
/// EleutherAI/lm-evaluation-harness, MIT License, Copyright (c) 2020 EleutherAI; file as of
/// commit b733598568fde3afa0e008892f8e7bb18cd472b6 (2026-01-27, unchanged on `main` at
/// 4e7e0d47f33bc71070c1d38394bafbb52b117163). The yaml's folded plain scalars are unfolded
/// (line breaks become single spaces). The exemplars are Wei et al. 2022's (chain-of-thought
/// prompting). A verbatim copy of that yaml is `data/gsm8k-cot.yaml` in this crate; a test
/// checks these texts against it.
pub const COT_EXEMPLARS: [Exemplar; 8] = [
    Exemplar {
        question: "There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they are done, there will be 21 trees. How many trees did the grove workers plant today?",
        target: "There are 15 trees originally. Then there were 21 trees after some more were planted. So there must have been 21 - 15 = 6. The answer is 6.",
    },
    Exemplar {
        question: "If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?",
        target: "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5.",
    },
    Exemplar {
        question: "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left in total?",
        target: "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After eating 35, they had 74 - 35 = 39. The answer is 39.",
    },
    Exemplar {
        question: "Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many lollipops did Jason give to Denny?",
        target: "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 - 12 = 8. The answer is 8.",
    },
    Exemplar {
        question: "Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys does he have now?",
        target: "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. 5 + 4 = 9. The answer is 9.",
    },
    Exemplar {
        question: "There were nine computers in the server room. Five more computers were installed each day, from monday to thursday. How many computers are now in the server room?",
        target: "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = 20 computers were added. 9 + 20 is 29. The answer is 29.",
    },
    Exemplar {
        question: "Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How many golf balls did he have at the end of wednesday?",
        target: "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After losing 2 more, he had 35 - 2 = 33 golf balls. The answer is 33.",
    },
    Exemplar {
        question: "Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
        target: "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - 15 dollars left. 23 - 15 is 8. The answer is 8.",
    },
];

/// The most few-shot examples either format takes (all of [`COT_EXEMPLARS`]).
pub const MAX_SHOTS: usize = 8;

impl PromptFormat {
    /// The config spellings, in order.
    pub const NAMES: [&'static str; 2] = ["gsm8k", "gsm8k-cot"];

    /// Parses a config value; the error names the allowed values.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "gsm8k" => Ok(PromptFormat::Gsm8k),
            "gsm8k-cot" => Ok(PromptFormat::Gsm8kCot),
            other => Err(format!(
                "format must be `gsm8k` or `gsm8k-cot`, got `{other}`"
            )),
        }
    }

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            PromptFormat::Gsm8k => Self::NAMES[0],
            PromptFormat::Gsm8kCot => Self::NAMES[1],
        }
    }

    /// Few-shot examples when the config gives no `shots`.
    pub fn default_shots(self) -> usize {
        match self {
            PromptFormat::Gsm8k => 0,
            PromptFormat::Gsm8kCot => MAX_SHOTS,
        }
    }

    /// Whether the few-shot examples come from the train split (else they are fixed).
    pub fn needs_train_examples(self) -> bool {
        self == PromptFormat::Gsm8k
    }

    /// This format's `doc_to_text` as a template, named as the format.
    pub fn template(self) -> Template {
        let text = self.question_text(PLACEHOLDER);
        Template::new(self.name(), &text)
    }

    /// The built-in templates of `gsm8k` (config `templates`): the `doc_to_text` of both
    /// formats (`gsm8k`, `gsm8k-cot`) and `problem` (`Problem: {question}\nSolution:`).
    pub fn builtin_templates() -> Vec<Template> {
        vec![
            PromptFormat::Gsm8k.template(),
            PromptFormat::Gsm8kCot.template(),
            Template::new("problem", "Problem: {question}\nSolution:"),
        ]
    }

    /// The stop strings of prompts written in `templates`: the format's, then the text each
    /// template puts before a question, trimmed (a model going on to a next problem writes
    /// it), each once. The format's own alone where the config chose no templates.
    pub fn stop_in(self, templates: &Templates) -> Vec<String> {
        let mut stop = self.stop();
        if templates.configured() {
            for t in templates.list() {
                let lead = t.lead().trim();
                if !lead.is_empty() && !stop.iter().any(|s| s == lead) {
                    stop.push(lead.to_string());
                }
            }
        }
        stop
    }

    /// The generation stop strings (lm-eval's `until`).
    pub fn stop(self) -> Vec<String> {
        let first = match self {
            PromptFormat::Gsm8k => "Question:",
            PromptFormat::Gsm8kCot => "Q:",
        };
        [first, "</s>", "<|im_end|>"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// The strict-match rule for completions in this format.
    pub fn strict_match(self) -> StrictMatch {
        match self {
            PromptFormat::Gsm8k => StrictMatch::Hashes,
            PromptFormat::Gsm8kCot => StrictMatch::TheAnswerIs,
        }
    }

    /// `doc_to_text` of one question.
    pub fn question_text(self, question: &str) -> String {
        match self {
            PromptFormat::Gsm8k => format!("Question: {question}\nAnswer:"),
            PromptFormat::Gsm8kCot => format!("Q: {question}\nA:"),
        }
    }

    /// The few-shot preamble of `shots` examples, each followed by the blank-line delimiter
    /// (empty for zero-shot). `train` supplies the `gsm8k` examples and must hold at least
    /// `shots` problems then; `gsm8k-cot` ignores it. `shots` is at most [`MAX_SHOTS`].
    pub fn preamble(self, shots: usize, train: &[Problem]) -> String {
        self.preamble_in(&self.template(), shots, train)
    }

    /// [`PromptFormat::preamble`] with every example's question written in `template` (in
    /// place of this format's `doc_to_text`); the targets stay the format's.
    pub fn preamble_in(self, template: &Template, shots: usize, train: &[Problem]) -> String {
        let example =
            |question: &str, target: &str| format!("{} {target}\n\n", template.render(question));
        match self {
            PromptFormat::Gsm8k => train[..shots]
                .iter()
                .map(|p| example(&p.question, &p.answer))
                .collect(),
            PromptFormat::Gsm8kCot => COT_EXEMPLARS[..shots]
                .iter()
                .map(|e| example(e.question, e.target))
                .collect(),
        }
    }

    /// The reference completion of a problem in this format, with the target delimiter.
    pub fn reference(self, problem: &Problem) -> String {
        match self {
            PromptFormat::Gsm8k => format!(" {}", problem.answer),
            PromptFormat::Gsm8kCot => format!(" {}", cot_solution(&problem.answer, &problem.gold)),
        }
    }

    /// A one-line description for task details.
    pub fn describe(self) -> &'static str {
        match self {
            PromptFormat::Gsm8k => "lm-eval gsm8k: Question: …\\nAnswer:",
            PromptFormat::Gsm8kCot => {
                "lm-eval gsm8k-cot: Q: …\\nA: after CoT exemplars (Wei et al. 2022)"
            }
        }
    }
}

/// A GSM8K solution in `gsm8k-cot` style: everything before its last `#### ` (the worked
/// lines, annotations kept) followed by `The answer is {gold}.` in place of the `#### n` line.
/// A solution without `#### ` gets the sentence appended on a new line.
pub fn cot_solution(solution: &str, gold: &str) -> String {
    let body = match solution.rfind("#### ") {
        Some(i) => &solution[..i],
        None => solution,
    };
    let sep = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{body}{sep}The answer is {gold}.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(question: &str, answer: &str, gold: &str) -> Problem {
        Problem {
            line: 1,
            question: question.into(),
            answer: answer.into(),
            gold: gold.into(),
        }
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for name in PromptFormat::NAMES {
            assert_eq!(PromptFormat::parse(name).unwrap().name(), name);
        }
        let e = PromptFormat::parse("cot").unwrap_err();
        assert!(
            e.contains("`gsm8k` or `gsm8k-cot`") && e.contains("`cot`"),
            "{e}"
        );
        assert_eq!(PromptFormat::default(), PromptFormat::Gsm8k);
    }

    #[test]
    fn format_templates_write_what_the_formats_write() {
        let train = [problem("q1?", "a1\n#### 1", "1")];
        for format in [PromptFormat::Gsm8k, PromptFormat::Gsm8kCot] {
            let t = format.template();
            assert_eq!(t.name, format.name());
            assert_eq!(t.render("x?"), format.question_text("x?"));
            assert_eq!(
                format.preamble_in(&t, 1, &train),
                format.preamble(1, &train)
            );
        }
        let problem_template = &PromptFormat::builtin_templates()[2];
        assert_eq!(
            PromptFormat::Gsm8k.preamble_in(problem_template, 1, &train),
            "Problem: q1?\nSolution: a1\n#### 1\n\n"
        );
        let names = ["gsm8k-cot".to_string(), "problem".to_string()];
        let builtins = PromptFormat::builtin_templates();
        let default = PromptFormat::Gsm8k.template();
        let chosen = Templates::from_config(Some(&names), &builtins, default.clone(), |_| Ok(()));
        assert_eq!(
            PromptFormat::Gsm8k.stop_in(&chosen.unwrap()),
            ["Question:", "</s>", "<|im_end|>", "Q:", "Problem:"]
        );
        let single = Templates::single(default);
        assert_eq!(
            PromptFormat::Gsm8k.stop_in(&single),
            PromptFormat::Gsm8k.stop()
        );
    }

    #[test]
    fn cot_solution_replaces_the_hash_line() {
        let s = cot_solution("3+4=<<3+4=7>>7 apples.\n#### 7", "7");
        assert_eq!(s, "3+4=<<3+4=7>>7 apples.\nThe answer is 7.");
        assert_eq!(
            cot_solution("so\n#### 1,200\n", "1,200"),
            "so\nThe answer is 1,200."
        );
        assert_eq!(
            cot_solution("no hashes", "3"),
            "no hashes\nThe answer is 3."
        );
        assert_eq!(cot_solution("", "3"), "The answer is 3.");
    }

    #[test]
    fn both_formats_lay_out_examples_like_lm_eval() {
        let train = [
            problem("q1?", "a1\n#### 1", "1"),
            problem("q2?", "a2\n#### 2", "2"),
        ];
        assert_eq!(
            PromptFormat::Gsm8k.preamble(2, &train),
            "Question: q1?\nAnswer: a1\n#### 1\n\nQuestion: q2?\nAnswer: a2\n#### 2\n\n"
        );
        assert_eq!(PromptFormat::Gsm8k.preamble(0, &train), "");
        let cot = PromptFormat::Gsm8kCot.preamble(2, &[]);
        let e = &COT_EXEMPLARS;
        assert_eq!(
            cot,
            format!(
                "Q: {}\nA: {}\n\nQ: {}\nA: {}\n\n",
                e[0].question, e[0].target, e[1].question, e[1].target
            )
        );
        assert_eq!(PromptFormat::Gsm8kCot.preamble(0, &[]), "");
        assert_eq!(PromptFormat::Gsm8kCot.question_text("x?"), "Q: x?\nA:");
        assert_eq!(PromptFormat::Gsm8kCot.stop(), ["Q:", "</s>", "<|im_end|>"]);
        assert_eq!(
            PromptFormat::Gsm8k.stop(),
            ["Question:", "</s>", "<|im_end|>"]
        );
        let p = problem("q?", "1+1=<<1+1=2>>2\n#### 2", "2");
        assert_eq!(PromptFormat::Gsm8k.reference(&p), " 1+1=<<1+1=2>>2\n#### 2");
        assert_eq!(
            PromptFormat::Gsm8kCot.reference(&p),
            " 1+1=<<1+1=2>>2\nThe answer is 2."
        );
    }
}
