//! The suite's optional `likelihood:` section: the ELBO of each diffusion model against the
//! exact log-likelihood of formal tasks (plugin API 1.8 likelihood requests), run by
//! `crate::likelihood` after the cells.
//!
//! ```yaml
//! likelihood:
//!   tasks: [bigram, hmm]           # default: every task (each needs `exact_loglikelihood`)
//!   models: [oracle, mdm, ar]      # default: every model (each needs `loglikelihood`)
//!   mc_num: [1, 4, 16, 64, 128]    # ELBO draws per estimate
//!   rows: 16                       # (context, continuation) rows per task
//!   context: 8                     # context tokens; the continuation is the rest of `length`
//!   length: 32                     # default: the suite's first length
//!   repeats: 8                     # independent estimates per row (the spread)
//!   choices: 4                     # options per multiple-choice item
//!   draws: stratified              # stratified | antithetic | independent
//!   batch: 16                      # draws per forward pass
//!   seed: 0                        # the reference sequences' stream
//! ```

use super::{did_you_mean, ModelEntry, SuiteError, SuiteSource, TaskEntry};
use marked_yaml::types::MarkedMappingNode;
use marked_yaml::Node;
use serde::{Deserialize, Serialize};

/// The checked `likelihood:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LikelihoodSpec {
    pub tasks: Vec<String>,
    pub models: Vec<String>,
    pub mc_num: Vec<usize>,
    pub rows: usize,
    pub context: usize,
    pub length: usize,
    pub repeats: usize,
    pub choices: usize,
    /// `stratified`, `antithetic` or `independent` (`dlm_plugin_api::DrawScheme`).
    pub draws: String,
    pub batch: usize,
    pub seed: u64,
}

const KEYS: &[&str] = &[
    "tasks", "models", "mc_num", "rows", "context", "length", "repeats", "choices", "draws",
    "batch", "seed",
];
const EXAMPLE: &str =
    "likelihood: {tasks: [bigram], models: [oracle], mc_num: [1, 4, 16, 64], rows: 16, context: 8}";
/// Bounds that keep one section to minutes on a CPU, not hours.
const MAX_MC_NUM: i64 = 4096;
const MAX_ROWS: i64 = 4096;

/// The section, if the suite has one. `lengths` are the suite's; `length` defaults to the first.
pub(super) fn parse(
    top: &MarkedMappingNode,
    source: &SuiteSource,
    tasks: &[TaskEntry],
    models: &[ModelEntry],
    lengths: &[usize],
) -> Result<Option<LikelihoodSpec>, SuiteError> {
    let Some(node) = top.get_node("likelihood") else {
        return Ok(None);
    };
    let err = |n: &Node, message: String| SuiteError::at(source, n.span(), message);
    let Some(map) = node.as_mapping() else {
        return Err(err(
            node,
            format!("`likelihood` must be a mapping of settings, e.g. `{EXAMPLE}`"),
        ));
    };
    for (key, _) in map.iter() {
        if !KEYS.contains(&key.as_str()) {
            return Err(SuiteError::at(
                source,
                key.span(),
                format!(
                    "unknown key `{}` in `likelihood`{} (it takes {})",
                    key.as_str(),
                    did_you_mean(key.as_str(), KEYS.iter().copied()),
                    KEYS.join(", ")
                ),
            ));
        }
    }
    let whole = |key: &str, min: i64, max: i64, default: Option<i64>| {
        let Some(v) = map.get_node(key) else {
            return default.ok_or_else(|| {
                err(
                    node,
                    format!("`likelihood` needs `{key}`, e.g. `{EXAMPLE}`"),
                )
            });
        };
        whole_number(v, key, min, max).map_err(|m| err(v, m))
    };
    let names = |key: &str, known: Vec<&str>, what: &str| -> Result<Vec<String>, SuiteError> {
        let Some(v) = map.get_node(key) else {
            return Ok(known.iter().map(|s| s.to_string()).collect());
        };
        let list = v.as_sequence().ok_or_else(|| {
            err(
                v,
                format!("`likelihood.{key}` must be a list of the suite's {what} names, e.g. `{key}: [{}]`", known.first().unwrap_or(&"name")),
            )
        })?;
        let mut out = Vec::new();
        for item in list.iter() {
            let name = item.as_scalar().map(|s| s.as_str()).unwrap_or_default();
            if !known.contains(&name) {
                return Err(err(
                    item,
                    format!(
                        "`likelihood.{key}` names `{name}`, which is not one of the suite's {what}s{} (they are: {})",
                        did_you_mean(name, known.iter().copied()),
                        known.join(", ")
                    ),
                ));
            }
            out.push(name.to_string());
        }
        if out.is_empty() {
            return Err(err(v, format!("`likelihood.{key}` is empty; name at least one {what} or leave the key out for all")));
        }
        Ok(out)
    };
    let mc_num = parse_mc_num(map, node, source)?;
    let length = whole("length", 2, i64::MAX, lengths.first().map(|&l| l as i64))? as usize;
    if let Some(v) = map
        .get_node("length")
        .filter(|_| !lengths.contains(&length))
    {
        // Models are trained and opened per length: another one has no checkpoint.
        return Err(err(
            v,
            format!(
                "`likelihood.length` is {length}, which is not one of the suite's `lengths` ({lengths:?}); use one of them"
            ),
        ));
    }
    let context = whole("context", 0, length as i64 - 1, Some(length as i64 / 4))? as usize;
    let draws = match map.get_node("draws") {
        None => "stratified".to_string(),
        Some(v) => {
            let s = v.as_scalar().map(|s| s.as_str()).unwrap_or_default();
            if !["stratified", "antithetic", "independent"].contains(&s) {
                return Err(err(
                    v,
                    format!(
                        "`likelihood.draws` is `{s}`; use stratified, antithetic or independent"
                    ),
                ));
            }
            s.to_string()
        }
    };
    Ok(Some(LikelihoodSpec {
        tasks: names(
            "tasks",
            tasks.iter().map(|t| t.name.as_str()).collect(),
            "task",
        )?,
        models: names(
            "models",
            models.iter().map(|m| m.name.as_str()).collect(),
            "model",
        )?,
        mc_num,
        rows: whole("rows", 1, MAX_ROWS, Some(16))? as usize,
        context,
        length,
        repeats: whole("repeats", 2, 1000, Some(8))? as usize,
        choices: whole("choices", 2, 64, Some(4))? as usize,
        draws,
        batch: whole("batch", 1, 4096, Some(16))? as usize,
        seed: whole("seed", 0, i64::MAX, Some(0))? as u64,
    }))
}

/// `mc_num`: distinct whole counts, at least one.
fn parse_mc_num(
    map: &MarkedMappingNode,
    node: &Node,
    source: &SuiteSource,
) -> Result<Vec<usize>, SuiteError> {
    let err = |n: &Node, message: String| SuiteError::at(source, n.span(), message);
    let mc_node = map.get_node("mc_num").ok_or_else(|| {
        err(
            node,
            format!("`likelihood` needs `mc_num`, the ELBO draws per estimate, e.g. `{EXAMPLE}`"),
        )
    })?;
    let mc_list = mc_node.as_sequence().ok_or_else(|| {
        err(
            mc_node,
            "`likelihood.mc_num` must be a list of draw counts, e.g. `mc_num: [1, 4, 16, 64, 128]`"
                .into(),
        )
    })?;
    let mut mc_num = Vec::new();
    for v in mc_list.iter() {
        let n = whole_number(v, "mc_num", 1, MAX_MC_NUM).map_err(|m| err(v, m))? as usize;
        if mc_num.contains(&n) {
            return Err(err(
                v,
                format!("`likelihood.mc_num` lists {n} twice; give each count once"),
            ));
        }
        mc_num.push(n);
    }
    if mc_num.is_empty() {
        return Err(err(
            mc_node,
            "`likelihood.mc_num` is empty; give at least one count, e.g. `[1, 16, 128]`".into(),
        ));
    }
    Ok(mc_num)
}

/// A whole number in `min..=max`, or the message saying what to write instead.
fn whole_number(v: &Node, key: &str, min: i64, max: i64) -> Result<i64, String> {
    let text = v.as_scalar().map(|s| s.as_str()).unwrap_or_default();
    match text.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "`likelihood.{key}` is {n}; it must be between {min} and {max}"
        )),
        Err(_) => Err(format!(
            "`likelihood.{key}` must be a whole number (between {min} and {max}); got `{text}`"
        )),
    }
}
