//! The YAML tree → JSON, and lookups into it by section and key.

use super::*;

/// Span of the first mapping key named `key`, depth first.
pub(super) fn find_key(node: &Node, key: &str) -> Option<marked_yaml::Span> {
    match node {
        Node::Scalar(_) => None,
        Node::Sequence(seq) => seq.iter().find_map(|n| find_key(n, key)),
        Node::Mapping(map) => map.iter().find_map(|(k, v)| {
            if k.as_str() == key {
                Some(*k.span())
            } else {
                find_key(v, key)
            }
        }),
    }
}

/// Convert the `config` of `section[index]` from the YAML tree to JSON, typing plain scalars.
pub(super) fn section_config(
    top: &marked_yaml::types::MarkedMappingNode,
    section: &str,
    index: usize,
    source: &SuiteSource,
) -> Result<Value, SuiteError> {
    section_value(top, &[section], index, "config", source)
}

pub(super) fn section_value(
    top: &marked_yaml::types::MarkedMappingNode,
    path: &[&str],
    index: usize,
    key: &str,
    source: &SuiteSource,
) -> Result<Value, SuiteError> {
    let entry = top
        .get_sequence(path[0])
        .and_then(|seq| seq.get_node(index))
        .and_then(Node::as_mapping);
    match entry.and_then(|m| m.get_node(key)) {
        None => Ok(Value::Null),
        Some(node) => yaml_to_json(node, source),
    }
}

/// YAML → JSON with YAML 1.2 core-schema typing of unquoted scalars.
pub fn yaml_to_json(node: &Node, source: &SuiteSource) -> Result<Value, SuiteError> {
    Ok(match node {
        Node::Scalar(s) => {
            let text = s.as_str();
            if !s.may_coerce() {
                Value::String(text.to_string())
            } else if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
                Value::Null
            } else if let Some(b) = s.as_bool() {
                Value::Bool(b)
            } else if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else if let Ok(f) = text.parse::<f64>() {
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| {
                        SuiteError::at(source, s.span(), format!("`{text}` is not a finite number"))
                    })?
            } else {
                Value::String(text.to_string())
            }
        }
        Node::Sequence(seq) => Value::Array(
            seq.iter()
                .map(|n| yaml_to_json(n, source))
                .collect::<Result<_, _>>()?,
        ),
        Node::Mapping(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.as_str().to_string(), yaml_to_json(v, source)?)))
                .collect::<Result<_, SuiteError>>()?,
        ),
    })
}
