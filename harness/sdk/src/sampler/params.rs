//! Sampler parameters (`params:` in a suite): declared once, as typed handles, by the sampler
//! that reads them; parsed and checked against the declarations, with errors naming the
//! parameter.
//!
//! A sampler declares a parameter as a `const` handle ([`Number`], [`OptionalNumber`],
//! [`Count`], [`CountOrWord`] or [`Choice`]), lists it in [`super::Sampler::params`], and reads its value with
//! [`Params::get`] — the handle's type gives the value's type and its default. Every sampler
//! takes the draw's [`TEMPERATURE`], [`TOP_K`] and [`TOP_P`] without listing them.

use super::draw::Shaping;
use super::Sampler;
use crate::{PluginError, Result};
use serde_json::Value;
use std::collections::BTreeMap;

/// What values a [`Number`] parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Any finite number.
    Any,
    /// `x ≥ 0`.
    NonNegative,
    /// `0 < x ≤ 1` (a probability mass).
    UnitInterval,
}

impl Bound {
    fn holds(self, x: f64) -> bool {
        match self {
            Bound::Any => true,
            Bound::NonNegative => x >= 0.0,
            Bound::UnitInterval => x > 0.0 && x <= 1.0,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Bound::Any => "a finite number",
            Bound::NonNegative => "≥ 0",
            Bound::UnitInterval => "in (0, 1]",
        }
    }
}

/// What kind of value a parameter takes (see [`Param`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A finite number within `bound`; `default: None` means unset unless given.
    Number {
        /// The value when the suite gives none.
        default: Option<f64>,
        /// The values accepted.
        bound: Bound,
    },
    /// A positive integer; unset unless given.
    Count,
    /// A positive integer, or the string `word`, which is the default.
    CountOrWord {
        /// The one string accepted, and the default.
        word: &'static str,
    },
    /// One of `options` (a string); the first is the default.
    Choice {
        /// The names accepted.
        options: Vec<&'static str>,
    },
}

/// One declared parameter, as the parser and the harness's descriptor see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The key in a suite's `params:`.
    pub name: &'static str,
    /// Its type and default.
    pub kind: Kind,
    /// What it does, in a few words (shown in errors about its value).
    pub doc: &'static str,
}

/// A parameter's typed handle: declared as a `const` by the sampler that reads it.
pub trait Handle {
    /// What [`Params::get`] returns for it.
    type Value;
    /// Its key in a suite's `params:`.
    fn name(&self) -> &'static str;
    /// The declaration the parser checks values against.
    fn param(&self) -> Param;
    /// The value given in the suite (already checked against [`Handle::param`]), or the default.
    fn read(&self, given: Option<&Value>) -> Self::Value;
}

/// A number with a default.
#[derive(Debug, Clone, Copy)]
pub struct Number {
    /// Its key.
    pub name: &'static str,
    /// Its value when the suite gives none.
    pub default: f64,
    /// The values accepted.
    pub bound: Bound,
    /// What it does.
    pub doc: &'static str,
}

impl Handle for Number {
    fn name(&self) -> &'static str {
        self.name
    }
    type Value = f64;
    fn param(&self) -> Param {
        Param {
            name: self.name,
            kind: Kind::Number {
                default: Some(self.default),
                bound: self.bound,
            },
            doc: self.doc,
        }
    }
    fn read(&self, given: Option<&Value>) -> f64 {
        given.and_then(Value::as_f64).unwrap_or(self.default)
    }
}

/// A number that is unset (`None`) unless the suite gives it.
#[derive(Debug, Clone, Copy)]
pub struct OptionalNumber {
    /// Its key.
    pub name: &'static str,
    /// The values accepted.
    pub bound: Bound,
    /// What it does.
    pub doc: &'static str,
}

impl Handle for OptionalNumber {
    fn name(&self) -> &'static str {
        self.name
    }
    type Value = Option<f64>;
    fn param(&self) -> Param {
        Param {
            name: self.name,
            kind: Kind::Number {
                default: None,
                bound: self.bound,
            },
            doc: self.doc,
        }
    }
    fn read(&self, given: Option<&Value>) -> Option<f64> {
        given.and_then(Value::as_f64)
    }
}

/// A positive integer that is unset (`None`) unless the suite gives it.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    /// Its key.
    pub name: &'static str,
    /// What it does.
    pub doc: &'static str,
}

impl Handle for Count {
    fn name(&self) -> &'static str {
        self.name
    }
    type Value = Option<usize>;
    fn param(&self) -> Param {
        Param {
            name: self.name,
            kind: Kind::Count,
            doc: self.doc,
        }
    }
    fn read(&self, given: Option<&Value>) -> Option<usize> {
        given.and_then(Value::as_u64).map(|x| x as usize)
    }
}

/// A positive integer or one word, the default (`refresh`: `every_block` or every k steps):
/// [`Params::get`] gives `None` for the word.
#[derive(Debug, Clone, Copy)]
pub struct CountOrWord {
    /// Its key.
    pub name: &'static str,
    /// The word that stands for the default.
    pub word: &'static str,
    /// What it does.
    pub doc: &'static str,
}

impl Handle for CountOrWord {
    fn name(&self) -> &'static str {
        self.name
    }
    type Value = Option<usize>;
    fn param(&self) -> Param {
        Param {
            name: self.name,
            kind: Kind::CountOrWord { word: self.word },
            doc: self.doc,
        }
    }
    fn read(&self, given: Option<&Value>) -> Option<usize> {
        given.and_then(Value::as_u64).map(|x| x as usize)
    }
}

/// One of named options, each standing for a value of `T`; the first is the default.
#[derive(Debug, Clone, Copy)]
pub struct Choice<T: Copy + 'static> {
    /// Its key.
    pub name: &'static str,
    /// The option names and what each stands for; the first is the default.
    pub options: &'static [(&'static str, T)],
    /// What it does.
    pub doc: &'static str,
}

impl<T: Copy + 'static> Handle for Choice<T> {
    type Value = T;
    fn name(&self) -> &'static str {
        self.name
    }
    fn param(&self) -> Param {
        Param {
            name: self.name,
            kind: Kind::Choice {
                options: self.options.iter().map(|(name, _)| *name).collect(),
            },
            doc: self.doc,
        }
    }
    /// # Panics
    /// If the declaration has no options (a bug in the sampler, found by any test of it).
    fn read(&self, given: Option<&Value>) -> T {
        let named = given.and_then(Value::as_str);
        self.options
            .iter()
            .find(|(name, _)| Some(*name) == named)
            .or(self.options.first())
            .map(|(_, value)| *value)
            .expect("a Choice parameter declares at least one option")
    }
}

/// `temperature` (every sampler): the draw's temperature; 0 is argmax.
pub const TEMPERATURE: Number = Number {
    name: "temperature",
    default: 1.0,
    bound: Bound::NonNegative,
    doc: "1 samples the model's distribution, 0 means argmax",
};
/// `top_k` (every sampler): draw among the `k` most likely tokens only.
pub const TOP_K: Count = Count {
    name: "top_k",
    doc: "draw among the k most likely tokens",
};
/// `top_p` (every sampler): draw from the smallest set of tokens holding this mass.
pub const TOP_P: OptionalNumber = OptionalNumber {
    name: "top_p",
    bound: Bound::UnitInterval,
    doc: "draw from the smallest set of tokens holding this probability mass",
};
/// `block_length` (the block samplers): semi-autoregressive blocks of this many positions
/// (default: one block, the whole generation region).
pub const BLOCK_LENGTH: Count = Count {
    name: "block_length",
    doc: "semi-autoregressive blocks of this many positions",
};

/// The parameters every sampler takes: they shape each draw.
pub(crate) fn draw_params() -> [Param; 3] {
    [TEMPERATURE.param(), TOP_K.param(), TOP_P.param()]
}

/// A request's parameter values, checked against the sampler's declarations.
#[derive(Debug, Clone)]
pub struct Params {
    given: BTreeMap<String, Value>,
    pub(crate) shaping: Shaping,
}

impl Params {
    /// Check `given` (a suite's `params:`) against what `sampler` declares (and the draw's
    /// parameters): an unknown key or a bad value is an error naming the parameter.
    pub fn parse(sampler: &dyn Sampler, given: &BTreeMap<String, Value>) -> Result<Params> {
        let declared: Vec<Param> = draw_params().into_iter().chain(sampler.params()).collect();
        for key in given.keys() {
            if !declared.iter().any(|p| p.name == key) {
                let names: Vec<&str> = declared.iter().map(|p| p.name).collect();
                return Err(PluginError::bad_config(format!(
                    "sampler `{}` has no parameter `{key}`; its parameters: {}",
                    sampler.name(),
                    names.join(", ")
                )));
            }
        }
        for param in &declared {
            if let Some(value) = given.get(param.name) {
                check(param, value)?;
            }
        }
        let read = |name: &str| given.get(name);
        Ok(Params {
            given: given.clone(),
            shaping: Shaping {
                temperature: TEMPERATURE.read(read(TEMPERATURE.name)),
                top_k: TOP_K.read(read(TOP_K.name)),
                top_p: TOP_P.read(read(TOP_P.name)),
            },
        })
    }

    /// Every parameter `sampler` reads (the draw's first), by name, with its value: the one
    /// given, else its default (`null` for one unset by default, such as `top_k`, or
    /// `block_length`: one block), as a run's record states the sampler's full settings.
    pub fn resolved(&self, sampler: &dyn Sampler) -> serde_json::Map<String, Value> {
        draw_params()
            .into_iter()
            .chain(sampler.params())
            .map(|param| {
                let value = self
                    .given
                    .get(param.name)
                    .cloned()
                    .unwrap_or(match param.kind {
                        Kind::Number {
                            default: Some(x), ..
                        } => Value::from(x),
                        Kind::Choice { options } => Value::from(options[0]),
                        Kind::CountOrWord { word } => Value::from(word),
                        Kind::Number { default: None, .. } | Kind::Count => Value::Null,
                    });
                (param.name.to_string(), value)
            })
            .collect()
    }

    /// The value of the parameter `handle` declares (its default when the suite gives none).
    pub fn get<H: Handle>(&self, handle: &H) -> H::Value {
        handle.read(self.given.get(handle.name()))
    }
}

/// What a reply's [`crate::GenerateReply::settings`] says of the sampler: its name, `steps`,
/// `schedule` (where it takes one; its default filled in) and every parameter it reads
/// ([`Params::resolved`]), as `{"sampler": {…}}`.
pub(crate) fn settings(sampler: &dyn Sampler, params: &Params, spec: &crate::SamplerSpec) -> Value {
    let mut described = serde_json::Map::new();
    described.insert("name".into(), Value::from(sampler.name()));
    described.insert("steps".into(), Value::from(spec.steps));
    if sampler.takes_schedule() {
        let schedule = spec
            .schedule
            .as_deref()
            .unwrap_or(super::Schedule::DEFAULT_NAME);
        described.insert("schedule".into(), Value::from(schedule));
    }
    described.insert("params".into(), Value::Object(params.resolved(sampler)));
    serde_json::json!({ "sampler": described })
}

/// Whether `value` is one `param` accepts.
fn check(param: &Param, value: &Value) -> Result<()> {
    let name = param.name;
    match &param.kind {
        Kind::Number { bound, .. } => {
            let x = value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                PluginError::bad_config(format!(
                    "sampler parameter `{name}` must be a number, got {value}"
                ))
            })?;
            if !bound.holds(x) {
                return Err(PluginError::bad_config(format!(
                    "{name} must be {}, got {x} ({name}: {})",
                    bound.describe(),
                    param.doc
                )));
            }
        }
        Kind::Count => {
            if value.as_u64().is_none_or(|x| x == 0) {
                return Err(PluginError::bad_config(format!(
                    "sampler parameter `{name}` must be a positive integer, got {value}"
                )));
            }
        }
        Kind::CountOrWord { word } => {
            let fits = value.as_str() == Some(*word) || value.as_u64().is_some_and(|x| x > 0);
            if !fits {
                return Err(PluginError::bad_config(format!(
                    "sampler parameter `{name}` must be `{word}` or a positive integer, got {value} ({name}: {})",
                    param.doc
                )));
            }
        }
        Kind::Choice { options } => {
            if !value.as_str().is_some_and(|s| options.contains(&s)) {
                return Err(PluginError::bad_config(format!(
                    "{name} must be one of: {}; got {value}",
                    options.join(", ")
                )));
            }
        }
    }
    Ok(())
}
