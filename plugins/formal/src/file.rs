//! Languages read from files: the `file` task's n-gram and HMM tables.
//!
//! # File schema
//!
//! A YAML file (any extension but `.json`) or a JSON file (`.json`) holding one mapping:
//!
//! ```yaml
//! kind: ngram            # ngram | hmm                                        (required)
//! name: my-bigram        # label in reports; default: the file name            (optional)
//! description: "..."     # free text, ignored                                 (optional)
//! vocab: 3               # V >= 2, tokens are 0..V                            (required)
//! order: 2               # ngram only: n >= 2                                 (ngram: required)
//! states: 2              # hmm only: H; default: the length of `initial`      (optional)
//! initial: [0.2, 0.3, 0.5]
//! transitions:
//!   - [0.5, 0.5, 0]      # one row per context (ngram) or hidden state (hmm)
//!   - [1/3, 1/3, 1/3]
//!   - [0, 0, 1]
//! emissions:             # hmm only: one row per hidden state, over the V tokens
//!   - [...]
//! ```
//!
//! * **n-gram of order `n`** (`kind: ngram`): `initial` is the joint distribution of the first
//!   `n-1` tokens, with `V^(n-1)` entries indexed by the window code of `(t_0, …, t_{n-2})`
//!   (oldest token first): `Σ_p t_p · V^(n-2-p)` — for a trigram over 3 tokens the order is
//!   `(0,0), (0,1), (0,2), (1,0), …, (2,2)`. `transitions` has one row per context window in the
//!   same order; row `w` is `P(x_k = · | x_{k-n+1..k-1} = w)` over the `V` tokens. For a bigram
//!   the windows are single tokens: `initial` is `P(x_0)` and row `a` of `transitions` is
//!   `P(x_k | x_{k-1} = a)`.
//! * **HMM with `H` hidden states** (`kind: hmm`): `initial` is `P(z_0)` over the `H` states,
//!   `transitions` has `H` rows of `H` entries (`P(z_{t+1} = j | z_t = i)` in row `i`, column
//!   `j`), `emissions` has `H` rows of `V` entries (`P(x_t = v | z_t = j)` in row `j`).
//! * Entries are numbers or fractions written `a/b` (e.g. `1/3`; quote them in JSON: `"1/3"`).
//!   YAML's `.nan` and `.inf` are read (and then rejected by validation).
//! * Validation (see [`crate::language::tables`]): shapes as above; entries finite and
//!   non-negative; `initial` sums to 1 within `1e-9`; every other row sums to 1 within `1e-9`
//!   or is all zero, which is allowed only for a context or hidden state that can never occur
//!   (unreachable from `initial`). Rows are then divided by their sum. This guarantees that the
//!   support is non-empty for every sequence length.
//! * Unknown keys, duplicate keys (YAML) and keys of the other kind are errors.
//!
//! Every error names the file and, where it concerns a row, the table, the row (counted from 0)
//! and — for YAML — the line, e.g.
//! `lang.yaml:7: row 1 of the transition table (`transitions`, rows counted from 0): sums to 0.9 …`.
//!
//! A path is read as given: a relative path is resolved against the current working directory
//! of the process (the `dlm-bench` run and its workers, which inherit it). Use absolute paths
//! in suites that are run from elsewhere.

use std::path::Path;

use thiserror::Error;

use crate::language::{tables, Language, LanguageError};

/// An error in a language file; the message names the file (and row and line, where known).
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{0}")]
pub struct FileError(pub String);

/// The two kinds a file can describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    NGram,
    Hmm,
}

/// A language read from a file.
#[derive(Debug, Clone)]
pub struct LanguageFile {
    /// The path as given.
    pub path: String,
    /// `name` from the file, or the file name.
    pub name: String,
    pub kind: FileKind,
    pub language: Language,
    /// FNV-1a 64-bit hash of the file's bytes, in hex: identifies the content a task was
    /// described with.
    pub content_hash: String,
}

/// Syntax of a language file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
}

impl Format {
    /// JSON for a `.json` extension (any case), YAML otherwise.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// FNV-1a 64-bit hash ([`dlm_sdk::fnv1a_64`]), hex.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:016x}", dlm_sdk::fnv1a_64(bytes.iter().copied()))
}

/// Reads and validates a language file.
pub fn load(path: &str) -> Result<LanguageFile, FileError> {
    let p = Path::new(path);
    let text = std::fs::read_to_string(p).map_err(|e| {
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "?".into());
        FileError(format!(
            "cannot read language file `{path}`: {e} (a relative path is resolved against the \
             current working directory, {cwd})"
        ))
    })?;
    let default_name = p
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path)
        .to_string();
    let (language, kind, name) = parse(&text, Format::of_path(p), path)?;
    Ok(LanguageFile {
        path: path.to_string(),
        name: name.unwrap_or(default_name),
        kind,
        language,
        content_hash: content_hash(text.as_bytes()),
    })
}

/// Parses and validates the text of a language file; `origin` names it in errors. Returns the
/// language, its kind and the file's `name`, if any.
pub fn parse(
    text: &str,
    format: Format,
    origin: &str,
) -> Result<(Language, FileKind, Option<String>), FileError> {
    let root = match format {
        Format::Yaml => from_yaml(text, origin)?,
        Format::Json => {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| FileError(format!("{origin}: invalid JSON: {e}")))?;
            from_json(&value)
        }
    };
    let ctx = Ctx { origin };
    ctx.language(&root)
}

/// A parsed document, from either syntax, with the line each value starts on (YAML only).
#[derive(Debug)]
struct Item {
    line: Option<usize>,
    value: Value,
}

#[derive(Debug)]
enum Value {
    /// A scalar as written (YAML) or a JSON string.
    Text(String),
    Number(f64),
    Seq(Vec<Item>),
    /// Keys with the line each starts on, and values.
    Map(Vec<(String, Option<usize>, Item)>),
    /// Something else (JSON null or boolean), described in words.
    Other(&'static str),
}

fn from_yaml(text: &str, origin: &str) -> Result<Item, FileError> {
    let options = marked_yaml::LoaderOptions::default().error_on_duplicate_keys(true);
    let node = marked_yaml::parse_yaml_with_options(0, text, options).map_err(|e| match e {
        // Displayed as "line:column: message".
        marked_yaml::LoadError::TopLevelMustBeMapping(_) => FileError(format!(
            "{origin}:{e}: a language file must be a mapping with the keys kind, vocab, \
             initial, transitions (and order for an n-gram, emissions for an HMM)"
        )),
        marked_yaml::LoadError::DuplicateKey(_) => {
            FileError(format!("{origin}: invalid YAML: {e}"))
        }
        _ => FileError(format!("{origin}:{e} (invalid YAML)")),
    })?;
    Ok(convert_yaml(&node))
}

fn convert_yaml(node: &marked_yaml::Node) -> Item {
    use marked_yaml::Node;
    let line = node.span().start().map(|m| m.line());
    let value = match node {
        Node::Scalar(s) => Value::Text(s.as_str().to_string()),
        Node::Sequence(seq) => Value::Seq(seq.iter().map(convert_yaml).collect()),
        Node::Mapping(map) => Value::Map(
            map.iter()
                .map(|(k, v)| {
                    let key_line = k.span().start().map(|m| m.line());
                    (k.as_str().to_string(), key_line, convert_yaml(v))
                })
                .collect(),
        ),
    };
    Item { line, value }
}

fn from_json(value: &serde_json::Value) -> Item {
    use serde_json::Value as J;
    let value = match value {
        J::Null => Value::Other("null"),
        J::Bool(_) => Value::Other("a boolean"),
        J::Number(n) => n.as_f64().map_or(Value::Other("a number"), Value::Number),
        J::String(s) => Value::Text(s.clone()),
        J::Array(a) => Value::Seq(a.iter().map(from_json).collect()),
        J::Object(o) => Value::Map(
            o.iter()
                .map(|(k, v)| (k.clone(), None, from_json(v)))
                .collect(),
        ),
    };
    Item { line: None, value }
}

/// A number as written: decimal or scientific, `a/b`, YAML's `.nan`/`.inf`.
fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    match s {
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    if let Some((a, b)) = s.split_once('/') {
        let (a, b) = (a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?);
        return (b != 0.0).then_some(a / b);
    }
    s.parse::<f64>().ok()
}

fn describe(v: &Value) -> String {
    match v {
        Value::Text(s) if s.is_empty() => "nothing".into(),
        Value::Text(s) => format!("`{s}`"),
        Value::Number(x) => format!("the number {x}"),
        Value::Seq(_) => "a list".into(),
        Value::Map(_) => "a mapping".into(),
        Value::Other(what) => (*what).into(),
    }
}

const KEYS: &[&str] = &[
    "kind",
    "name",
    "description",
    "vocab",
    "order",
    "states",
    "initial",
    "transitions",
    "emissions",
];

/// A table row with the line it starts on.
struct Row {
    values: Vec<f64>,
    line: Option<usize>,
}

struct Ctx<'a> {
    origin: &'a str,
}

impl Ctx<'_> {
    fn err(&self, line: Option<usize>, msg: impl std::fmt::Display) -> FileError {
        match line {
            Some(l) => FileError(format!("{}:{l}: {msg}", self.origin)),
            None => FileError(format!("{}: {msg}", self.origin)),
        }
    }

    fn number(&self, item: &Item, what: &dyn Fn() -> String) -> Result<f64, FileError> {
        match &item.value {
            Value::Number(x) => Ok(*x),
            Value::Text(s) => parse_number(s).ok_or_else(|| {
                self.err(
                    item.line,
                    format!(
                        "{} must be a number (or a fraction a/b), not {}",
                        what(),
                        describe(&item.value)
                    ),
                )
            }),
            other => Err(self.err(
                item.line,
                format!("{} must be a number, not {}", what(), describe(other)),
            )),
        }
    }

    fn integer(&self, item: &Item, key: &str) -> Result<usize, FileError> {
        let bad = || {
            self.err(
                item.line,
                format!(
                    "`{key}` must be a whole number, not {}",
                    describe(&item.value)
                ),
            )
        };
        match &item.value {
            Value::Number(x) if x.fract() == 0.0 && *x >= 0.0 && *x <= usize::MAX as f64 => {
                Ok(*x as usize)
            }
            Value::Text(s) => s.trim().parse::<usize>().map_err(|_| bad()),
            _ => Err(bad()),
        }
    }

    fn row(&self, item: &Item, what: &dyn Fn() -> String) -> Result<Row, FileError> {
        let Value::Seq(entries) = &item.value else {
            return Err(self.err(
                item.line,
                format!(
                    "{} must be a list of numbers, not {}",
                    what(),
                    describe(&item.value)
                ),
            ));
        };
        let values = entries
            .iter()
            .enumerate()
            .map(|(j, e)| self.number(e, &|| format!("entry {j} of {}", what())))
            .collect::<Result<Vec<f64>, _>>()?;
        Ok(Row {
            values,
            line: item.line,
        })
    }

    fn rows(&self, item: &Item, table: &str) -> Result<Vec<Row>, FileError> {
        let Value::Seq(rows) = &item.value else {
            return Err(self.err(
                item.line,
                format!(
                    "{} must be a list of rows (lists of numbers), not {}",
                    crate::language::table_location(table, None),
                    describe(&item.value)
                ),
            ));
        };
        rows.iter()
            .enumerate()
            .map(|(r, row)| self.row(row, &|| crate::language::table_location(table, Some(r))))
            .collect()
    }

    fn language(&self, root: &Item) -> Result<(Language, FileKind, Option<String>), FileError> {
        let Value::Map(entries) = &root.value else {
            return Err(self.err(
                root.line,
                format!(
                    "a language file must be a mapping with the keys kind, vocab, initial, \
                     transitions (and order for an n-gram, emissions for an HMM), not {}",
                    describe(&root.value)
                ),
            ));
        };
        for (key, key_line, _) in entries {
            if !KEYS.contains(&key.as_str()) {
                return Err(self.err(
                    *key_line,
                    format!("unknown key `{key}`; the keys are {}", KEYS.join(", ")),
                ));
            }
        }
        let get = |key: &str| entries.iter().find(|(k, ..)| k == key).map(|(.., v)| v);
        let require = |key: &str, why: &str| {
            get(key).ok_or_else(|| self.err(root.line, format!("missing key `{key}` ({why})")))
        };
        let kind_item = require("kind", "`ngram` or `hmm`")?;
        let kind = match &kind_item.value {
            Value::Text(s) if s == "ngram" || s == "n-gram" => FileKind::NGram,
            Value::Text(s) if s == "hmm" => FileKind::Hmm,
            other => {
                return Err(self.err(
                    kind_item.line,
                    format!("`kind` must be `ngram` or `hmm`, not {}", describe(other)),
                ))
            }
        };
        let name = match get("name") {
            None => None,
            Some(Item {
                value: Value::Text(s),
                ..
            }) => Some(s.clone()),
            Some(item) => {
                return Err(self.err(
                    item.line,
                    format!("`name` must be text, not {}", describe(&item.value)),
                ))
            }
        };
        let vocab = self.integer(require("vocab", "the number of tokens, >= 2")?, "vocab")?;
        let initial_item = require("initial", "the initial distribution")?;
        let initial = self.row(initial_item, &|| {
            crate::language::table_location(tables::INITIAL, None)
        })?;
        let transitions_item = require("transitions", "one row per context or hidden state")?;
        let transitions = self.rows(transitions_item, tables::TRANSITIONS)?;
        let values = |rows: &[Row]| rows.iter().map(|r| r.values.clone()).collect::<Vec<_>>();

        let (result, emissions) = match kind {
            FileKind::NGram => {
                for key in ["states", "emissions"] {
                    if let Some(item) = get(key) {
                        return Err(self.err(
                            item.line,
                            format!("`{key}` belongs to `kind: hmm`; an n-gram file has `order`"),
                        ));
                    }
                }
                let order = self.integer(
                    require("order", "n of the n-gram: 2 for a bigram, …")?,
                    "order",
                )?;
                (
                    Language::from_ngram_tables(
                        order,
                        vocab,
                        &initial.values,
                        &values(&transitions),
                    ),
                    Vec::new(),
                )
            }
            FileKind::Hmm => {
                if let Some(item) = get("order") {
                    return Err(self.err(
                        item.line,
                        "`order` belongs to `kind: ngram`; an HMM file has `states` (optional) \
                         and `emissions`",
                    ));
                }
                if let Some(item) = get("states") {
                    let states = self.integer(item, "states")?;
                    if states != initial.values.len() {
                        return Err(self.err(
                            initial_item.line,
                            format!(
                                "{} has {} entries but `states` is {states}",
                                crate::language::table_location(tables::INITIAL, None),
                                initial.values.len()
                            ),
                        ));
                    }
                }
                let emissions_item = require("emissions", "one row per hidden state")?;
                let emissions = self.rows(emissions_item, tables::EMISSIONS)?;
                (
                    Language::from_hmm_tables(
                        vocab,
                        &initial.values,
                        &values(&transitions),
                        &values(&emissions),
                    ),
                    emissions,
                )
            }
        };
        let language = result.map_err(|e| {
            let line = match &e {
                LanguageError::InvalidTable { table, row, .. } => {
                    let (item, rows) = match *table {
                        tables::TRANSITIONS => (transitions_item, &transitions),
                        tables::EMISSIONS => (get("emissions").unwrap_or(root), &emissions),
                        _ => (initial_item, &Vec::new()),
                    };
                    row.and_then(|r| rows.get(r))
                        .map_or(item.line, |r: &Row| r.line)
                }
                LanguageError::InvalidOrder { .. } | LanguageError::TooLarge { .. } => {
                    get("order").and_then(|i| i.line)
                }
                LanguageError::InvalidVocab { .. } => get("vocab").and_then(|i| i.line),
                LanguageError::InvalidStates { .. } => initial_item.line,
                _ => None,
            };
            self.err(line, e)
        })?;
        Ok((language, kind, name))
    }
}

#[cfg(test)]
mod tests;
