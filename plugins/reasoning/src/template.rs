//! Prompt templates: a task can write every problem in several templates (config key
//! `templates`), so the report can show whether a sampler's advantage survives a change of
//! wording.
//!
//! A template is a text with one `{question}` where the problem's question goes. A task has
//! built-in templates, named; an entry of `templates` is either such a name or an inline
//! template (a text containing `{question}`), which is named by its own text with line breaks
//! written `\n`.
//!
//! **Samples.** With `T` templates, sample `i` is problem `i / T` written in template `i mod T`:
//! every problem appears under every template next to each other, so a cell of `n` samples
//! holds `n / T` problems and the templates compare on the same problems. Its prompt id is the
//! problem's id followed by `@` and the template's name. Without `templates` the task has its
//! one default template, sample `i` is problem `i`, and the ids are the problems' own: the
//! prompts, ids and hashes of existing suites do not change.

/// Where a template puts the question.
pub const PLACEHOLDER: &str = "{question}";

/// The most templates a task takes (each one multiplies the prompts a cell needs).
pub const MAX_TEMPLATES: usize = 16;

/// One prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The name samples carry.
    pub name: String,
    /// The text, with one [`PLACEHOLDER`].
    pub text: String,
}

impl Template {
    /// A template from a name and a text with one [`PLACEHOLDER`].
    pub fn new(name: &str, text: &str) -> Self {
        Template {
            name: name.into(),
            text: text.into(),
        }
    }

    /// The prompt of `question` in this template.
    pub fn render(&self, question: &str) -> String {
        self.text.replacen(PLACEHOLDER, question, 1)
    }

    /// The text before the question (a model that goes on to a next problem writes it).
    pub fn lead(&self) -> &str {
        self.text.split(PLACEHOLDER).next().unwrap_or("")
    }

    /// Characters the template adds to a question.
    pub fn overhead_chars(&self) -> usize {
        self.text.chars().count() - PLACEHOLDER.chars().count()
    }
}

/// The templates a task writes its prompts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Templates {
    list: Vec<Template>,
    /// Set by the config (`templates`): prompt ids carry the template's name.
    configured: bool,
}

impl Templates {
    /// The task's one default template: prompts and ids as before templates existed.
    pub fn single(default: Template) -> Self {
        Templates {
            list: vec![default],
            configured: false,
        }
    }

    /// The templates of a config's `templates` entries (`None`: the key is absent, so
    /// `default`). An entry names one of `builtins` or is an inline template; `check` refuses
    /// an inline text the task cannot use (e.g. characters outside its vocabulary). Errors
    /// name the entry and the allowed names.
    pub fn from_config(
        entries: Option<&[String]>,
        builtins: &[Template],
        default: Template,
        check: impl Fn(&str) -> Result<(), String>,
    ) -> Result<Self, String> {
        let Some(entries) = entries else {
            return Ok(Templates::single(default));
        };
        if entries.is_empty() || entries.len() > MAX_TEMPLATES {
            return Err(format!(
                "templates: give 1 to {MAX_TEMPLATES} templates (got {}); leave the key out for the task's default",
                entries.len()
            ));
        }
        let names: Vec<&str> = builtins.iter().map(|t| t.name.as_str()).collect();
        let mut list: Vec<Template> = Vec::with_capacity(entries.len());
        for entry in entries {
            let template = match builtins.iter().find(|t| &t.name == entry) {
                Some(t) => t.clone(),
                None if entry.matches(PLACEHOLDER).count() == 1 => {
                    check(entry).map_err(|e| format!("templates: {entry:?}: {e}"))?;
                    Template::new(&entry.replace('\n', "\\n"), entry)
                }
                None => {
                    return Err(format!(
                        "templates: {entry:?} is neither a built-in template ({}) nor a text with exactly one `{PLACEHOLDER}`",
                        names.join(", ")
                    ))
                }
            };
            if list.iter().any(|t| t.name == template.name) {
                return Err(format!(
                    "templates: `{}` is given twice; each template once",
                    template.name
                ));
            }
            list.push(template);
        }
        Ok(Templates {
            list,
            configured: true,
        })
    }

    /// The templates, in config order.
    pub fn list(&self) -> &[Template] {
        &self.list
    }

    /// Whether the config chose them (else the task's one default).
    pub fn configured(&self) -> bool {
        self.configured
    }

    /// Problem index and template of global sample `index` (see the module doc).
    pub fn of_sample(&self, index: u64) -> (u64, &Template) {
        let t = self.list.len() as u64;
        (index / t, &self.list[(index % t) as usize])
    }

    /// The prompt id of a problem's id `base` in `template`.
    pub fn prompt_id(&self, base: &str, template: &Template) -> String {
        match self.configured {
            true => format!("{base}@{}", template.name),
            false => base.to_string(),
        }
    }

    /// The problem's id and the template of a prompt id; `None` where no template's suffix
    /// ends it (with configured templates).
    pub fn split_id<'a>(&self, id: &'a str) -> Option<(&'a str, &Template)> {
        if !self.configured {
            return Some((id, &self.list[0]));
        }
        self.list.iter().find_map(|t| {
            let base = id.strip_suffix(t.name.as_str())?.strip_suffix('@')?;
            Some((base, t))
        })
    }

    /// The template's name as a sample records it: `None` with the default template alone.
    pub fn recorded_name(&self, template: &Template) -> Option<String> {
        self.configured.then(|| template.name.clone())
    }

    /// The most characters any template adds to a question.
    pub fn max_overhead_chars(&self) -> usize {
        self.list
            .iter()
            .map(Template::overhead_chars)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtins() -> Vec<Template> {
        vec![
            Template::new("plain", "{question}\n"),
            Template::new("space", "{question} "),
        ]
    }

    fn parse(entries: &[&str]) -> Result<Templates, String> {
        let entries: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
        Templates::from_config(
            Some(&entries),
            &builtins(),
            builtins()[0].clone(),
            |text| match text.contains('!') {
                true => Err("`!` is not in the vocabulary".into()),
                false => Ok(()),
            },
        )
    }

    #[test]
    fn without_the_key_samples_and_ids_are_the_problems_own() {
        let t =
            Templates::from_config(None, &builtins(), builtins()[0].clone(), |_| Ok(())).unwrap();
        assert!(!t.configured());
        for i in [0, 1, 7] {
            let (problem, template) = t.of_sample(i);
            assert_eq!(problem, i);
            assert_eq!(template.name, "plain");
            assert_eq!(t.prompt_id(&format!("s0-{i}"), template), format!("s0-{i}"));
            assert_eq!(t.recorded_name(template), None);
        }
        assert_eq!(t.split_id("s0-3").unwrap().0, "s0-3");
    }

    #[test]
    fn templates_interleave_so_each_problem_appears_under_each() {
        let t = parse(&["space", "plain", ">{question}<"]).unwrap();
        let got: Vec<(u64, String)> = (0..7)
            .map(|i| {
                let (p, template) = t.of_sample(i);
                (p, template.name.clone())
            })
            .collect();
        let want = [
            (0, "space"),
            (0, "plain"),
            (0, ">{question}<"),
            (1, "space"),
            (1, "plain"),
            (1, ">{question}<"),
            (2, "space"),
        ];
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0, g.1.as_str()), w);
        }
        let inline = &t.list()[2];
        assert_eq!(inline.render("What is 1+2?"), ">What is 1+2?<");
        assert_eq!(inline.lead(), ">");
        assert_eq!(inline.overhead_chars(), 2);
        assert_eq!(t.max_overhead_chars(), 2);
        for template in t.list() {
            let id = t.prompt_id("s3-12", template);
            assert_eq!(id, format!("s3-12@{}", template.name));
            let (base, back) = t.split_id(&id).unwrap();
            assert_eq!((base, back), ("s3-12", template));
            assert_eq!(t.recorded_name(template), Some(template.name.clone()));
        }
        assert!(t.split_id("s3-12").is_none());
        assert!(t.split_id("s3-12@other").is_none());
    }

    #[test]
    fn inline_templates_are_named_by_their_text() {
        let t = parse(&["Q {question}\nA"]).unwrap();
        assert_eq!(t.list()[0].name, "Q {question}\\nA");
        assert_eq!(t.list()[0].render("x"), "Q x\nA");
        assert_eq!(t.list()[0].lead(), "Q ");
    }

    #[test]
    fn bad_entries_are_refused_naming_them() {
        let e = parse(&["fancy"]).unwrap_err();
        assert!(
            e.contains("\"fancy\"") && e.contains("plain, space") && e.contains("{question}"),
            "{e}"
        );
        let e = parse(&["{question}{question}"]).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        let e = parse(&["plain", "space", "plain"]).unwrap_err();
        assert!(e.contains("`plain` is given twice"), "{e}");
        let e = parse(&["{question}!"]).unwrap_err();
        assert!(e.contains("vocabulary") && e.contains("{question}!"), "{e}");
        let e = parse(&[]).unwrap_err();
        assert!(e.contains("1 to 16"), "{e}");
    }
}
