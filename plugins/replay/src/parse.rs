//! Line-by-line reading: UTF-8 and JSON checks, format detection, and one reader per format.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::ReplayError;
use crate::set::ReplaySet;
use crate::{Format, ReplayRow};

/// The keys a native line may hold.
const NATIVE_KEYS: [&str; 7] = [
    "doc_id",
    "generation",
    "sample",
    "steps",
    "nfe",
    "seconds",
    "sampler",
];

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const GZIP_MAGIC: &[u8] = b"\x1F\x8B";

/// Where a line came from, to build errors.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    path: &'a Path,
    line: usize,
}

impl Ctx<'_> {
    fn err(self, field: Option<&str>, message: impl Into<String>) -> ReplayError {
        ReplayError::Malformed {
            path: self.path.to_owned(),
            line: self.line,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

/// What the lm-eval reader remembers of the first record of each doc_id, to accept the
/// per-filter copies lm-eval writes.
struct LmSeen {
    line: usize,
    resps: Vec<String>,
    filters: Vec<Option<String>>,
}

/// The reader's state across lines.
struct Reader<'a> {
    path: &'a Path,
    requested: Format,
    /// The file's format and the line that fixed it.
    fixed: Option<(Format, usize)>,
    set: Option<ReplaySet>,
    /// human-eval / evalplus: the next sample index per task_id.
    next_sample: HashMap<String, u32>,
    /// native rows without `sample`: the next sample index per (steps, doc_id).
    next_native: HashMap<(Option<u32>, String), u32>,
    /// lm-eval: the first record of each doc_id.
    lm_seen: HashMap<String, LmSeen>,
}

pub(crate) fn parse<R: BufRead>(
    mut reader: R,
    origin: &Path,
    format: Format,
) -> Result<ReplaySet, ReplayError> {
    let mut state = Reader {
        path: origin,
        requested: format,
        fixed: None,
        set: None,
        next_sample: HashMap::new(),
        next_native: HashMap::new(),
        lm_seen: HashMap::new(),
    };
    let mut buf = Vec::new();
    let mut line = 0usize;
    let mut gzip = false;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| ReplayError::Io {
                path: origin.to_owned(),
                source,
            })?;
        if read == 0 {
            break;
        }
        line += 1;
        let mut bytes = buf.as_slice();
        bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let mut skipped = 0;
        if line == 1 {
            gzip = bytes.starts_with(GZIP_MAGIC);
            if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
                bytes = rest;
                skipped = UTF8_BOM.len();
            }
        }
        let text = std::str::from_utf8(bytes).map_err(|e| ReplayError::NotUtf8 {
            path: origin.to_owned(),
            line,
            column: skipped + e.valid_up_to() + 1,
            gzip,
        })?;
        if text.trim().is_empty() {
            continue;
        }
        state.line(Ctx { path: origin, line }, text)?;
    }
    state.set.ok_or_else(|| ReplayError::Empty {
        path: origin.to_owned(),
    })
}

/// The format a line's keys say it is in (see "Detection" in the crate docs).
fn detect(obj: &Map<String, Value>) -> Option<Format> {
    if ["resps", "filtered_resps", "doc"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        Some(Format::LmEval)
    } else if obj.contains_key("task_id") {
        // A line with both is refused in `Reader::line` (the tools disagree on it).
        if obj.contains_key("solution") {
            Some(Format::EvalPlus)
        } else {
            Some(Format::HumanEval)
        }
    } else if obj.contains_key("doc_id") || obj.contains_key("generation") {
        Some(Format::Native)
    } else {
        None
    }
}

impl Reader<'_> {
    fn line(&mut self, ctx: Ctx<'_>, text: &str) -> Result<(), ReplayError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ctx.err(None, format!("not valid JSON ({e})")))?;
        let Value::Object(obj) = value else {
            return Err(ctx.err(
                None,
                format!("expected a JSON object, found {}", kind(&value)),
            ));
        };

        let format = match self.requested {
            Format::Auto => detect(&obj).ok_or_else(|| {
                let mut keys: Vec<&str> = obj.keys().map(String::as_str).take(8).collect();
                if obj.len() > keys.len() {
                    keys.push("...");
                }
                ctx.err(
                    None,
                    format!(
                        "cannot tell the format from the keys ({}): expected `doc_id` and \
                         `generation` (native), `resps` (lm-eval), or `task_id` with \
                         `completion` (human-eval) or `solution` (evalplus)",
                        if keys.is_empty() {
                            "none".to_owned()
                        } else {
                            keys.join(", ")
                        }
                    ),
                )
            })?,
            explicit => explicit,
        };
        if self.requested == Format::Auto
            && format == Format::EvalPlus
            && obj.contains_key("completion")
        {
            return Err(ctx.err(
                None,
                "holds both `completion` and `solution`: evalplus runs `solution` as the whole \
                 program, human-eval runs the prompt + `completion`; set `format: evalplus` or \
                 `format: human-eval` in the replay config to say which this file means",
            ));
        }
        match self.fixed {
            None => self.fixed = Some((format, ctx.line)),
            Some((first, first_line)) if first != format => {
                return Err(ReplayError::MixedFormats {
                    path: self.path.to_owned(),
                    first,
                    first_line,
                    found: format,
                    line: ctx.line,
                });
            }
            Some(_) => {}
        }
        let set = self
            .set
            .get_or_insert_with(|| ReplaySet::new(self.path.to_owned(), format));

        let result = match format {
            Format::Native => {
                native(ctx, &obj, &mut self.next_native).and_then(|row| set.insert(row))
            }
            Format::LmEval => lm_eval(ctx, &obj, set, &mut self.lm_seen),
            Format::HumanEval | Format::EvalPlus => {
                task_sample(ctx, &obj, format, set, &mut self.next_sample)
            }
            Format::Auto => unreachable!("detect never answers Auto"),
        };
        // With an explicit format, say when the line looks like another one.
        result.map_err(|e| match e {
            ReplayError::Malformed {
                path,
                line,
                field,
                mut message,
            } => {
                if let Some(looks) = detect(&obj).filter(|f| *f != format) {
                    message.push_str(&format!(" (this line looks like the {looks} format)"));
                }
                ReplayError::Malformed {
                    path,
                    line,
                    field,
                    message,
                }
            }
            other => other,
        })
    }
}

/// "a string", "an array", … for error messages, with short scalars shown.
fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// The field's value, treating `null` as absent.
fn present<'v>(obj: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    obj.get(name).filter(|v| !v.is_null())
}

fn required_str(ctx: Ctx<'_>, obj: &Map<String, Value>, name: &str) -> Result<String, ReplayError> {
    match present(obj, name) {
        None => Err(ctx.err(Some(name), "missing; expected a string")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ctx.err(
            Some(name),
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

fn optional_str(
    ctx: Ctx<'_>,
    obj: &Map<String, Value>,
    name: &str,
) -> Result<Option<String>, ReplayError> {
    match present(obj, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ctx.err(
            Some(name),
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

fn optional_u64(
    ctx: Ctx<'_>,
    obj: &Map<String, Value>,
    name: &str,
) -> Result<Option<u64>, ReplayError> {
    match present(obj, name) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ctx.err(
                Some(name),
                format!("expected a non-negative integer, found {}", kind(v)),
            )
        }),
    }
}

fn optional_u32(
    ctx: Ctx<'_>,
    obj: &Map<String, Value>,
    name: &str,
) -> Result<Option<u32>, ReplayError> {
    match present(obj, name) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ctx.err(
                    Some(name),
                    format!(
                        "expected a non-negative integer below 2^32, found {}",
                        kind(v)
                    ),
                )
            }),
    }
}

/// A doc_id given as a string, or as an integer stored as its decimal text.
fn doc_id(ctx: Ctx<'_>, obj: &Map<String, Value>, name: &str) -> Result<String, ReplayError> {
    match present(obj, name) {
        None => Err(ctx.err(Some(name), "missing; expected a string or an integer")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        Some(other) => Err(ctx.err(
            Some(name),
            format!("expected a string or an integer, found {}", kind(other)),
        )),
    }
}

/// A native line: one row. Without `sample`, the rows of one (steps, doc_id) are numbered
/// 0, 1, 2, … in file order.
fn native(
    ctx: Ctx<'_>,
    obj: &Map<String, Value>,
    next_native: &mut HashMap<(Option<u32>, String), u32>,
) -> Result<ReplayRow, ReplayError> {
    if let Some(unknown) = obj.keys().find(|k| !NATIVE_KEYS.contains(&k.as_str())) {
        return Err(ctx.err(
            Some(unknown),
            format!(
                "unknown field; a native line holds only {}",
                NATIVE_KEYS.join(", ")
            ),
        ));
    }
    let doc_id = doc_id(ctx, obj, "doc_id")?;
    let generation = required_str(ctx, obj, "generation")?;
    let steps = optional_u32(ctx, obj, "steps")?;
    let sample = match optional_u32(ctx, obj, "sample")? {
        Some(sample) => sample,
        None => {
            let counter = next_native.entry((steps, doc_id.clone())).or_insert(0);
            let sample = *counter;
            *counter = counter.checked_add(1).ok_or_else(|| {
                ctx.err(Some("doc_id"), "more than 2^32 samples for one document")
            })?;
            sample
        }
    };
    let nfe = optional_u64(ctx, obj, "nfe")?;
    let seconds = match present(obj, "seconds") {
        None => None,
        Some(v) => match v.as_f64() {
            Some(s) if s.is_finite() && s >= 0.0 => Some(s),
            _ => {
                return Err(ctx.err(
                    Some("seconds"),
                    format!("expected a non-negative number, found {}", kind(v)),
                ));
            }
        },
    };
    let sampler = optional_str(ctx, obj, "sampler")?;
    Ok(ReplayRow {
        doc_id,
        sample,
        generation,
        steps,
        nfe,
        seconds,
        sampler,
        line: ctx.line,
    })
}

/// An lm-eval record: one row per raw generation in `resps[0]`, or nothing for a per-filter
/// copy of a record already read.
fn lm_eval(
    ctx: Ctx<'_>,
    obj: &Map<String, Value>,
    set: &mut ReplaySet,
    seen: &mut HashMap<String, LmSeen>,
) -> Result<(), ReplayError> {
    let doc_id = match present(obj, "doc_id") {
        None => return Err(ctx.err(Some("doc_id"), "missing; expected a non-negative integer")),
        Some(v) => v.as_u64().ok_or_else(|| {
            ctx.err(
                Some("doc_id"),
                format!("expected a non-negative integer, found {}", kind(v)),
            )
        })?,
    }
    .to_string();

    let requests = match present(obj, "resps") {
        None => {
            return Err(ctx.err(
                Some("resps"),
                "missing; expected a list holding one list of generated strings",
            ));
        }
        Some(Value::Array(requests)) => requests,
        Some(other) => {
            return Err(ctx.err(
                Some("resps"),
                format!(
                    "expected a list holding one list of generated strings, found {}",
                    kind(other)
                ),
            ));
        }
    };
    let generations = match requests.as_slice() {
        [Value::Array(generations)] => generations,
        [other] => {
            return Err(ctx.err(
                Some("resps[0]"),
                format!(
                    "expected a list of generated strings, found {}",
                    kind(other)
                ),
            ));
        }
        [] => {
            return Err(ctx.err(
                Some("resps"),
                "empty; expected one list of generated strings",
            ));
        }
        many => {
            return Err(ctx.err(
                Some("resps"),
                format!(
                    "holds {} requests; only a generate_until task (one request per document) \
                     can be replayed",
                    many.len()
                ),
            ));
        }
    };
    if generations.is_empty() {
        return Err(ctx.err(
            Some("resps[0]"),
            "empty; expected at least one generated string",
        ));
    }
    let generations = generations
        .iter()
        .enumerate()
        .map(|(i, g)| match g {
            Value::String(s) => Ok(s.clone()),
            other => Err(ctx.err(
                Some(&format!("resps[0][{i}]")),
                format!("expected a string, found {}", kind(other)),
            )),
        })
        .collect::<Result<Vec<String>, _>>()?;
    let filter = optional_str(ctx, obj, "filter")?;

    if let Some(first) = seen.get_mut(&doc_id) {
        let repeats_filter = filter.is_some() && first.filters.contains(&filter);
        if first.resps == generations && !repeats_filter {
            first.filters.push(filter);
            return Ok(());
        }
        return Err(ReplayError::Duplicate {
            path: ctx.path.to_owned(),
            doc_id,
            sample: 0,
            steps: None,
            first_line: first.line,
            second_line: ctx.line,
        });
    }

    for (i, generation) in generations.iter().enumerate() {
        let sample = u32::try_from(i).map_err(|_| {
            ctx.err(
                Some("resps[0]"),
                "holds more than 2^32 generations".to_owned(),
            )
        })?;
        set.insert(ReplayRow {
            doc_id: doc_id.clone(),
            sample,
            generation: generation.clone(),
            steps: None,
            nfe: None,
            seconds: None,
            sampler: None,
            line: ctx.line,
        })?;
    }
    seen.insert(
        doc_id,
        LmSeen {
            line: ctx.line,
            resps: generations,
            filters: vec![filter],
        },
    );
    Ok(())
}

/// A human-eval or evalplus line: one row, numbered per task_id in file order.
fn task_sample(
    ctx: Ctx<'_>,
    obj: &Map<String, Value>,
    format: Format,
    set: &mut ReplaySet,
    next_sample: &mut HashMap<String, u32>,
) -> Result<(), ReplayError> {
    // MBPP files written by other tools give the task id as a number (`"task_id": 11`).
    let doc_id = doc_id(ctx, obj, "task_id")?;
    let field = if format == Format::EvalPlus {
        "solution"
    } else {
        "completion"
    };
    let generation = required_str(ctx, obj, field)?;
    let counter = next_sample.entry(doc_id.clone()).or_insert(0);
    let sample = *counter;
    *counter = counter
        .checked_add(1)
        .ok_or_else(|| ctx.err(Some("task_id"), "more than 2^32 samples for one task"))?;
    set.insert(ReplayRow {
        doc_id,
        sample,
        generation,
        steps: None,
        nfe: None,
        seconds: None,
        sampler: None,
        line: ctx.line,
    })
}
