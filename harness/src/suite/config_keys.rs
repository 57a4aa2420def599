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

/// A model whose component declares a config key that replaces the suite's `lengths`
/// ([`ConfigKey::replaces_lengths`](dlm_plugin_api::ConfigKey), e.g. `generation_length`), and
/// the value it gives that key (`None`: not set, so `lengths` is the whole sequence for it).
struct LengthOverride<'s> {
    model: &'s ModelEntry,
    key: &'s str,
    value: Option<&'s Value>,
}

impl LengthOverride<'_> {
    /// `generation_length: 256`, or `no generation_length`.
    fn shown(&self) -> String {
        match self.value {
            Some(v) => format!("`{}: {v}`", self.key),
            None => format!("no `{}`", self.key),
        }
    }

    /// Where the key is written (its line), or the model's `model:` line when it is not.
    fn span(&self) -> marked_yaml::Span {
        self.model
            .config_keys
            .iter()
            .find(|(k, _)| k == self.key)
            .map_or(self.model.component_span, |(_, span)| *span)
    }

    fn line(&self) -> String {
        self.span()
            .start()
            .map(|m| format!(" (line {})", m.line()))
            .unwrap_or_default()
    }
}

/// Give `lengths` one meaning per task: refuse, at plan time, a suite where a model's config
/// key that replaces the suite's `lengths` (declared so by its plugin; `info_of` finds a
/// model's component) is set for one model of a task and not, or to another value, for
/// another model of the same task — their cells, compared at one length, would have different
/// completion budgets — and a set key beside several suite lengths, whose cells would repeat
/// the same generations under different labels.
pub fn check_length_overrides<'i>(
    suite: &Suite,
    info_of: impl Fn(&ModelEntry) -> Option<&'i ComponentInfo>,
) -> Result<(), SuiteError> {
    let overrides: Vec<LengthOverride> = suite
        .models
        .iter()
        .filter_map(|model| {
            let key = info_of(model)?
                .config_keys
                .iter()
                .find(|k| k.replaces_lengths)?;
            let value = model.config.get(&key.name).filter(|v| !v.is_null());
            let key = key.name.as_str();
            Some(LengthOverride { model, key, value })
        })
        .collect();
    let lengths = format!("{:?}", suite.lengths);
    if suite.lengths.len() > 1 {
        if let Some(set) = overrides.iter().find(|o| o.value.is_some()) {
            return Err(SuiteError::at(
                &suite.source,
                &set.span(),
                format!(
                    "model `{}` sets {}, which replaces the suite's `lengths` for its cells (every prompt gets that many completion positions; a length only labels the cell), so with `lengths: {lengths}` its cells at each length would be the same generations; give the suite one length (e.g. `lengths: [{}]`), or remove `{}` so that each length is the whole sequence, prompt and completion",
                    set.model.name, set.shown(), suite.lengths[0], set.key
                ),
            ));
        }
    }
    for (ti, task) in suite.tasks.iter().enumerate() {
        let on_task: Vec<&LengthOverride> = overrides
            .iter()
            .filter(|o| o.model.tasks.contains(&ti))
            .collect();
        let Some(first) = on_task.first() else {
            continue;
        };
        let Some(other) = on_task.iter().find(|o| o.value != first.value) else {
            continue;
        };
        // Point at a key that is written: the one that is set where the other is not.
        let (here, there) = match other.value {
            Some(_) => (other, first),
            None => (first, other),
        };
        let message = match there.value {
            None => format!(
                "model `{}` sets {}, which replaces the suite's `lengths` for its cells (every prompt gets that many completion positions; the length only labels the cell), but model `{}`{}, which also runs task `{}`, has {}: for it `lengths: {lengths}` is the whole sequence, prompt and completion. Their cells would compare different completion budgets (and a prompt longer than the length fails its cells, leaving the others without a baseline); give `{}` {} too, or remove `{}` here",
                here.model.name, here.shown(), there.model.name, there.line(), task.name, there.shown(), there.model.name, here.shown(), here.key
            ),
            Some(_) => format!(
                "model `{}` sets {}, but model `{}`{}, which also runs task `{}`, sets {}: both replace the suite's `lengths`, and cells of one task at one length are compared with each other, so they need one completion budget; give both models the same value",
                here.model.name, here.shown(), there.model.name, there.line(), task.name, there.shown()
            ),
        };
        return Err(SuiteError::at(&suite.source, &here.span(), message));
    }
    Ok(())
}
