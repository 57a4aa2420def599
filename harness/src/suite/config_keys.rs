//! The keys of a task's or model's `config:` against those its plugin declares
//! (`ComponentInfo::config_keys`): unknown keys refused at plan time, relative paths joined to
//! the suite file's folder before the config reaches the plugin.

use super::*;
use dlm_plugin_api::ComponentInfo;

/// Each key of `section[index]`'s `config:` mapping with its span (none when `config` is
/// absent or not a mapping; the suite's shape checks report the latter).
pub(super) fn spans(
    top: &marked_yaml::types::MarkedMappingNode,
    section: &str,
    index: usize,
) -> Vec<(String, marked_yaml::Span)> {
    top.get_sequence(section)
        .and_then(|seq| seq.get_node(index))
        .and_then(Node::as_mapping)
        .and_then(|entry| entry.get_mapping("config"))
        .map(|config| {
            config
                .iter()
                .map(|(k, _)| (k.as_str().to_string(), *k.span()))
                .collect()
        })
        .unwrap_or_default()
}

/// Refuse a config key the component does not declare (only when it declares any), at the
/// key's place in the suite, with the closest declared key. `what` names the entry, e.g.
/// "task `bigram` (ngram in plugin `dlm-formal`)".
pub fn check_config_keys(
    source: &SuiteSource,
    keys: &[(String, marked_yaml::Span)],
    info: &ComponentInfo,
    what: &str,
) -> Result<(), SuiteError> {
    if info.config_keys.is_empty() {
        return Ok(());
    }
    let declared = || info.config_keys.iter().map(|k| k.name.as_str());
    for (key, span) in keys {
        if !declared().any(|d| d == key) {
            let hint = match closest(key, declared()) {
                Some(c) => format!("did you mean `{c}`?"),
                None => format!("it takes {}", declared().collect::<Vec<_>>().join(", ")),
            };
            return Err(SuiteError::at(
                source,
                span,
                format!("{what} takes no config key `{key}`; {hint}"),
            ));
        }
    }
    Ok(())
}

/// `config` as the plugin receives it: each string value (or string in a list) of a key
/// declared a path, when relative, joined to `base_dir`. The suite's config as written stays
/// the cell's identity, so a suite moved with its files keeps its results.
pub fn resolve_paths(config: &Value, info: &ComponentInfo, base_dir: Option<&Path>) -> Value {
    let (Some(base), Value::Object(map)) = (base_dir, config) else {
        return config.clone();
    };
    let join = |v: &Value| match v {
        Value::String(p) if Path::new(p).is_relative() => {
            Value::String(base.join(p).to_string_lossy().into_owned())
        }
        other => other.clone(),
    };
    let resolved = map
        .iter()
        .map(|(k, v)| {
            let is_path = info.config_keys.iter().any(|d| d.path && d.name == *k);
            let v = match v {
                Value::Array(items) if is_path => Value::Array(items.iter().map(join).collect()),
                v if is_path => join(v),
                v => v.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(resolved)
}
