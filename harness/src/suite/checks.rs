//! Shape, range and size checks on the YAML tree, before serde sees it.

use super::*;

// ---------------------------------------------------------------------------------------------
// Shape, range and size checks on the YAML tree. They run before serde sees the tree, so every
// type error, missing key, out-of-range number and repeated value is located at its node with a
// hint of what is valid; serde then only extracts a tree already known to fit `RawSuite`.

pub(super) fn gib(bytes: f64) -> String {
    let g = bytes / (1u64 << 30) as f64;
    if g >= 1024.0 {
        format!("{:.1} TiB", g / 1024.0)
    } else {
        format!("{g:.1} GiB")
    }
}

/// A scalar for a message: shortened, invisible characters escaped.
pub(super) fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == 40 {
            out.push('…');
            break;
        }
        if invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

pub(super) fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{feff}' | '\u{200b}'..='\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{a0}'
        )
}

/// What a node is, for "got …" in messages.
pub(super) fn describe_node(node: &Node) -> String {
    match node {
        Node::Scalar(s) if !s.may_coerce() => format!("the quoted text `{}`", shown(s.as_str())),
        Node::Scalar(s) if s.as_str().is_empty() => "nothing".into(),
        Node::Scalar(s) => format!("`{}`", shown(s.as_str())),
        Node::Sequence(_) => "a list".into(),
        Node::Mapping(_) => "a mapping".into(),
    }
}

pub(super) fn is_null(node: &Node) -> bool {
    node.as_scalar().is_some_and(|s| {
        s.may_coerce() && matches!(s.as_str(), "" | "~" | "null" | "Null" | "NULL")
    })
}

pub(super) fn position(node: &Node) -> String {
    match node.span().start() {
        Some(m) => format!("line {}:{}", m.line(), m.column()),
        None => "earlier".into(),
    }
}

/// The keys a serde-derived struct accepts (probed with an unknown key, so fields others add
/// to `RawSuite`, `RawTask`, … are known here without a second list).
pub(super) fn serde_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    let Ok(probe) = marked_yaml::parse_yaml(0, "dlm_bench_probe_key: 0") else {
        return &[];
    };
    match marked_yaml::from_node::<T>(&probe) {
        Err(e) => match &*e {
            marked_yaml::Error::UnknownFieldError(_, fields, _) => fields,
            _ => &[],
        },
        Ok(_) => &[],
    }
}

/// Every key the suite parser accepts, by place: the top level and the entries of `tasks`,
/// `models` and `samplers` (the lists unknown keys are checked against). `tests/docs_reference.rs`
/// holds docs/reference.md to it.
pub fn suite_keys() -> [(&'static str, &'static [&'static str]); 4] {
    [
        ("suite", serde_fields::<RawSuite>()),
        ("tasks", serde_fields::<RawTask>()),
        ("models", serde_fields::<RawModel>()),
        ("samplers", serde_fields::<RawSampler>()),
    ]
}

/// The loader reads the first YAML document only: refuse a second one instead of ignoring it.
/// A document marker is `---` (or `...`) at the start of a line; one before any content is
/// fine.
pub(super) fn check_single_document(source: &SuiteSource) -> Result<(), SuiteError> {
    let is = |line: &str, m: &str| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    };
    let (mut content, mut ended) = (false, false);
    for (i, line) in source.text.lines().enumerate() {
        let trimmed = line.trim_start();
        let second = if is(line, "---") {
            content
        } else if is(line, "...") {
            ended = true;
            false
        } else if trimmed.is_empty() || trimmed.starts_with('#') {
            false
        } else {
            content = true;
            ended
        };
        if second {
            return Err(SuiteError::at(
                source,
                &marked_yaml::Span::new_start(marked_yaml::Marker::new(0, 0, i + 1, 1)),
                "a suite is one YAML document, but another starts here: remove the document marker and what follows, or make a second suite file",
            ));
        }
    }
    Ok(())
}

/// Most columns of indentation and block markers (`- `, `? `, `: `) before a line's content.
/// The YAML parser recurses once per level of nesting, so a line such as `- - - … x` with
/// thousands of markers would overflow the stack before any other check could run. Block
/// nesting is bounded by this column (flow nesting, `[[…]]`, by the scanner's limit of 255).
pub const MAX_INDENT_COLUMNS: usize = 256;

pub(super) fn check_indentation(source: &SuiteSource) -> Result<(), SuiteError> {
    for (i, line) in source.text.lines().enumerate() {
        let chars: Vec<char> = line.chars().take(MAX_INDENT_COLUMNS + 2).collect();
        let mut at = 0;
        while at < chars.len() {
            let c = chars[at];
            let marker = matches!(c, '-' | '?' | ':')
                && chars.get(at + 1).is_none_or(|n| *n == ' ' || *n == '\t');
            if c == ' ' || c == '\t' || marker {
                if at >= MAX_INDENT_COLUMNS {
                    return Err(SuiteError::at(
                        source,
                        &marked_yaml::Span::new_start(marked_yaml::Marker::new(
                            0,
                            0,
                            i + 1,
                            at + 1,
                        )),
                        format!(
                            "lists and mappings are nested too deeply here (more than {MAX_INDENT_COLUMNS} columns of indentation and `- ` markers); a suite needs about 6 levels"
                        ),
                    ));
                }
                at += 1;
            } else {
                break;
            }
        }
    }
    Ok(())
}

/// Nesting depth, iteratively (a hostile file may nest deeper than the stack allows).
pub(super) fn check_depth(node: &Node, source: &SuiteSource) -> Result<(), SuiteError> {
    let mut stack = vec![(node, 0usize)];
    while let Some((n, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(SuiteError::at(
                source,
                n.span(),
                format!(
                    "lists and mappings are nested more than {MAX_DEPTH} levels deep here; a suite needs about 6"
                ),
            ));
        }
        match n {
            Node::Scalar(_) => {}
            Node::Sequence(seq) => stack.extend(seq.iter().map(|c| (c, depth + 1))),
            Node::Mapping(map) => stack.extend(map.values().map(|c| (c, depth + 1))),
        }
    }
    Ok(())
}

/// Drop a tree without recursion (the derived drop recurses once per level).
pub(super) fn dismantle(node: Node) {
    let mut stack = vec![node];
    while let Some(mut n) = stack.pop() {
        match &mut n {
            Node::Scalar(_) => {}
            Node::Sequence(seq) => stack.extend(std::mem::take(&mut **seq)),
            Node::Mapping(map) => {
                stack.extend(std::mem::take(&mut **map).into_iter().map(|(_, v)| v))
            }
        }
    }
}

/// Located checks of single nodes.
pub(super) struct Check<'a> {
    pub(super) source: &'a SuiteSource,
}

impl Check<'_> {
    pub(super) fn err(&self, node: &Node, message: impl Into<String>) -> SuiteError {
        SuiteError::at(self.source, node.span(), message)
    }

    /// A whole number in `min..=max`; `example` is a suite line, e.g. `samples: 400`.
    pub(super) fn whole(
        &self,
        node: &Node,
        what: &str,
        min: i64,
        max: i64,
        example: &str,
    ) -> Result<i64, SuiteError> {
        let hint = format!("{what} must be a whole number from {min} to {max}, e.g. `{example}`");
        let Node::Scalar(s) = node else {
            return Err(self.err(node, format!("{hint}; got {}", describe_node(node))));
        };
        let text = s.as_str();
        if !s.may_coerce() {
            return Err(self.err(
                node,
                format!("{hint}, without quotes; got {}", describe_node(node)),
            ));
        }
        match text.parse::<i64>() {
            Ok(v) if v < min => Err(self.err(
                node,
                format!("{what} must be at least {min}, got {v} ({hint})"),
            )),
            Ok(v) if v > max => Err(self.err(
                node,
                format!("{what} must be at most {max}, got {v} ({hint})"),
            )),
            Ok(v) => Ok(v),
            Err(_) => {
                let digits = text.trim_start_matches(['+', '-']);
                let message = if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                    format!("{what} must be at most {max}, got {} ({hint})", shown(text))
                } else if text
                    .parse::<f64>()
                    .is_ok_and(|f| f.is_finite() && f.fract() == 0.0)
                {
                    format!("{hint}; write `{}` out in digits", shown(text))
                } else {
                    format!("{hint}; got {}", describe_node(node))
                };
                Err(self.err(node, message))
            }
        }
    }

    /// A number of seconds in `(0, MAX_TIMEOUT_SECONDS]`.
    pub(super) fn seconds(
        &self,
        node: &Node,
        what: &str,
        example: &str,
    ) -> Result<f64, SuiteError> {
        let range = format!("above 0 and at most {MAX_TIMEOUT_SECONDS} (7 days), e.g. `{example}`");
        let value = node
            .as_scalar()
            .filter(|s| s.may_coerce())
            .and_then(|s| s.as_str().parse::<f64>().ok());
        let message = match value {
            Some(t) if t > 0.0 && t <= MAX_TIMEOUT_SECONDS => return Ok(t),
            Some(t) if t > MAX_TIMEOUT_SECONDS => {
                format!("{what} must be at most {MAX_TIMEOUT_SECONDS} seconds (7 days), got {t:e}; e.g. `{example}`")
            }
            Some(_) => format!(
                "{what} must be positive: a number of seconds {range}; got {}",
                describe_node(node)
            ),
            None => format!(
                "{what} must be a number of seconds {range}; got {}",
                describe_node(node)
            ),
        };
        Err(self.err(node, message))
    }

    /// A non-empty name or text.
    pub(super) fn text(&self, node: &Node, what: &str, example: &str) -> Result<(), SuiteError> {
        match node {
            Node::Scalar(s) if !s.as_str().trim().is_empty() => Ok(()),
            _ => Err(self.err(
                node,
                format!(
                    "`{what}` must be a non-empty name, e.g. `{example}`; got {}",
                    describe_node(node)
                ),
            )),
        }
    }

    /// A non-empty list.
    pub(super) fn list<'n>(
        &self,
        node: &'n Node,
        what: &str,
        example: &str,
    ) -> Result<&'n [Node], SuiteError> {
        match node {
            Node::Sequence(seq) if seq.is_empty() => Err(self.err(
                node,
                format!("`{what}` is empty; list at least one, e.g. `{example}`"),
            )),
            Node::Sequence(seq) => Ok(seq),
            _ => Err(self.err(
                node,
                format!(
                    "`{what}` must be a list, e.g. `{example}`; got {}",
                    describe_node(node)
                ),
            )),
        }
    }

    /// A list of distinct whole numbers.
    pub(super) fn distinct_wholes(
        &self,
        node: &Node,
        list: &str,
        what: &str,
        (min, max): (i64, i64),
        example: &str,
    ) -> Result<(), SuiteError> {
        let mut seen: BTreeMap<i64, &Node> = BTreeMap::new();
        for item in self.list(node, list, example)? {
            let v = self.whole(item, what, min, max, example)?;
            if let Some(first) = seen.insert(v, item) {
                return Err(self.err(
                    item,
                    format!(
                        "`{list}` lists {v} twice (first at {}); each value would run the same cells again and write duplicate rows: remove one",
                        position(first)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A list of distinct names.
    pub(super) fn distinct_names(
        &self,
        node: &Node,
        list: &str,
        example: &str,
    ) -> Result<(), SuiteError> {
        let mut seen: BTreeMap<&str, &Node> = BTreeMap::new();
        for item in self.list(node, list, example)? {
            self.text(item, list, example)?;
            let name = item.as_scalar().map(|s| s.as_str()).unwrap_or_default();
            if let Some(first) = seen.insert(name, item) {
                return Err(self.err(
                    item,
                    format!(
                        "`{list}` names `{}` twice (first at {}); its cells would run twice: remove one",
                        shown(name),
                        position(first)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A plugin's settings: a mapping, or nothing.
    pub(super) fn settings(
        &self,
        node: &Node,
        what: &str,
        example: &str,
    ) -> Result<(), SuiteError> {
        if node.as_mapping().is_some() || is_null(node) {
            Ok(())
        } else {
            Err(self.err(
                node,
                format!(
                    "`{what}` must be a mapping of settings, e.g. `{example}`; got {}",
                    describe_node(node)
                ),
            ))
        }
    }

    pub(super) fn boolean(&self, node: &Node, what: &str) -> Result<(), SuiteError> {
        match node.as_scalar() {
            Some(s) if s.may_coerce() && s.as_bool().is_some() => Ok(()),
            _ => Err(self.err(
                node,
                format!(
                    "`{what}` must be `true` or `false`; got {}",
                    describe_node(node)
                ),
            )),
        }
    }

    /// Unknown keys (with a suggestion) and missing required keys of one mapping.
    pub(super) fn keys(
        &self,
        node: &Node,
        map: &marked_yaml::types::MarkedMappingNode,
        place: &str,
        fields: &[&str],
        required: &[(&str, &str)],
    ) -> Result<(), SuiteError> {
        if !fields.is_empty() {
            for (key, _) in map.iter() {
                let k = key.as_str();
                if fields.contains(&k) {
                    continue;
                }
                let clean: String = k.chars().filter(|c| !invisible(*c)).collect();
                let mut message = format!("unknown key `{}` in {place}", shown(k));
                if clean != k {
                    message.push_str(&format!(
                        " (it contains an invisible character such as a byte-order mark; delete it{})",
                        if fields.contains(&clean.as_str()) {
                            format!(" to get `{clean}`")
                        } else {
                            String::new()
                        }
                    ));
                }
                message.push_str(&did_you_mean(&clean, fields.iter().copied()));
                return Err(SuiteError::at(self.source, key.span(), message));
            }
        }
        // A mapping's own mark is where its first value starts; point at its first key.
        let at = map.keys().next().map(|k| *k.span()).unwrap_or(*node.span());
        for (key, hint) in required {
            if map.get_node(key).is_none() {
                return Err(SuiteError::at(
                    self.source,
                    &at,
                    format!("{place} has no `{key}` ({hint})"),
                ));
            }
        }
        Ok(())
    }

    /// An error about an empty value (`samples:` and nothing) is marked where the next token
    /// starts, often on the next line: point at its key instead.
    pub(super) fn at_key<T>(
        &self,
        key: &marked_yaml::types::MarkedScalarNode,
        value: &Node,
        result: Result<T, SuiteError>,
    ) -> Result<T, SuiteError> {
        result.map_err(|mut e| {
            let empty = value
                .as_scalar()
                .is_some_and(|s| s.may_coerce() && s.as_str().is_empty());
            let here = value.span().start().map(|m| (m.line(), m.column()));
            if empty && e.location.as_ref().map(|l| (l.line, l.column)) == here {
                let message = std::mem::take(&mut e.message);
                e = SuiteError::at(self.source, key.span(), message);
            }
            e
        })
    }

    /// One entry of `tasks`, `models` or `samplers`: a mapping.
    pub(super) fn entry<'n>(
        &self,
        node: &'n Node,
        section: &str,
        example: &str,
    ) -> Result<&'n marked_yaml::types::MarkedMappingNode, SuiteError> {
        node.as_mapping().ok_or_else(|| {
            self.err(
                node,
                format!(
                    "each entry of `{section}` must be a mapping, e.g. `- {example}`; got {}",
                    describe_node(node)
                ),
            )
        })
    }
}

pub(super) const TASK_EXAMPLE: &str =
    "{name: bigram, plugin: dlm-formal, task: ngram, config: {order: 2}}";
pub(super) const MODEL_EXAMPLE: &str = "{name: oracle, plugin: dlm-formal, model: oracle}";
pub(super) const SAMPLER_EXAMPLE: &str = "{sampler: ddpm_cache, steps: [1, 4, 16]}";
pub(super) const PLUGIN_HINT: &str =
    "the plugin: a workspace crate such as `dlm-formal`, or a path to a plugin library";

/// Types, ranges, required and unknown keys, and repeated values of the whole tree.
pub(super) fn check_shape(node: &Node, source: &SuiteSource) -> Result<(), SuiteError> {
    let c = Check { source };
    let Some(top) = node.as_mapping() else {
        return Err(c.err(node, "the top level must be a mapping of suite keys (name, samples, lengths, tasks, models, samplers, …)"));
    };
    if top.is_empty() {
        return Err(c.err(
            node,
            "the suite is empty; it needs `name`, `lengths`, `tasks`, `models` and `samplers` (docs/reference.md lists every key)",
        ));
    }
    c.keys(
        node,
        top,
        "the suite",
        serde_fields::<RawSuite>(),
        &[
            ("name", "the suite's name, e.g. `name: quick`"),
            ("lengths", "the sequence lengths to sample, e.g. `lengths: [64]`"),
            ("tasks", "e.g. `tasks: [{name: bigram, plugin: dlm-formal, task: ngram, config: {order: 2}}]`"),
            ("models", "e.g. `models: [{name: oracle, plugin: dlm-formal, model: oracle}]`"),
            ("samplers", "e.g. `samplers: [{sampler: ddpm_cache, steps: [1, 4, 16]}]`"),
        ],
    )?;
    for (key, v) in top.iter() {
        c.at_key(key, v, check_top_value(&c, key.as_str(), v))?;
    }
    Ok(())
}

/// One top-level value.
pub(super) fn check_top_value(c: &Check, key: &str, v: &Node) -> Result<(), SuiteError> {
    match key {
        "name" => c.text(v, "name", "name: quick")?,
        "description" if v.as_scalar().is_none() => {
            return Err(c.err(
                v,
                format!("`description` must be text; got {}", describe_node(v)),
            ));
        }
        "samples" => drop(c.whole(v, "samples", 1, MAX_SAMPLES, "samples: 400")?),
        "batch_size" => drop(c.whole(v, "batch_size", 1, MAX_BATCH_SIZE, "batch_size: 50")?),
        "shard_samples" => {
            c.whole(v, "shard_samples", 1, MAX_SAMPLES, "shard_samples: 500")?;
        }
        "timeout_seconds" => drop(c.seconds(v, "timeout_seconds", "timeout_seconds: 300")?),
        "reference" => c.boolean(v, "reference")?,
        "trace" => c.boolean(v, "trace")?,
        "lengths" => c.distinct_wholes(v, "lengths", "length", (1, MAX_LENGTH), "lengths: [64]")?,
        "seeds" => c.distinct_wholes(v, "seeds", "seed", (0, i64::MAX), "seeds: [0, 1]")?,
        "tasks" => {
            for t in c.list(v, "tasks", &format!("tasks: [{TASK_EXAMPLE}]"))? {
                let map = c.entry(t, "tasks", TASK_EXAMPLE)?;
                c.keys(
                    t,
                    map,
                    "this `tasks` entry",
                    serde_fields::<RawTask>(),
                    &[
                        ("name", "its name in reports, e.g. `name: bigram`"),
                        ("plugin", PLUGIN_HINT),
                        ("task", "the task inside the plugin, e.g. `task: ngram`"),
                    ],
                )?;
                for (k, x) in map.iter() {
                    let checked = match k.as_str() {
                        "name" => c.text(x, "name", "name: bigram"),
                        "plugin" => c.text(x, "plugin", "plugin: dlm-formal"),
                        "task" => c.text(x, "task", "task: ngram"),
                        "config" => c.settings(x, "config", "config: {order: 2}"),
                        "doc_ids" => {
                            c.distinct_names(x, "doc_ids", "doc_ids: [HumanEval/3, HumanEval/17]")
                        }
                        "docs_from_replay" => c.boolean(x, "docs_from_replay"),
                        _ => Ok(()),
                    };
                    c.at_key(k, x, checked)?;
                }
            }
        }
        "models" => {
            for m in c.list(v, "models", &format!("models: [{MODEL_EXAMPLE}]"))? {
                let map = c.entry(m, "models", MODEL_EXAMPLE)?;
                c.keys(
                    m,
                    map,
                    "this `models` entry",
                    serde_fields::<RawModel>(),
                    &[
                        ("name", "its name in reports, e.g. `name: oracle`"),
                        ("plugin", PLUGIN_HINT),
                        ("model", "the model inside the plugin, e.g. `model: oracle`"),
                    ],
                )?;
                for (k, x) in map.iter() {
                    let checked = match k.as_str() {
                        "name" => c.text(x, "name", "name: oracle"),
                        "plugin" => c.text(x, "plugin", "plugin: dlm-formal"),
                        "model" => c.text(x, "model", "model: oracle"),
                        "baseline" => c.text(x, "baseline", "baseline: ar"),
                        "config" => c.settings(x, "config", "config: {hidden: 32}"),
                        "samplers" => c.distinct_names(x, "samplers", "samplers: [ddpm_cache]"),
                        "tasks" => c.distinct_names(x, "tasks", "tasks: [bigram]"),
                        _ => Ok(()),
                    };
                    c.at_key(k, x, checked)?;
                }
            }
        }
        "samplers" => {
            for s in c.list(v, "samplers", &format!("samplers: [{SAMPLER_EXAMPLE}]"))? {
                let map = c.entry(s, "samplers", SAMPLER_EXAMPLE)?;
                c.keys(
                    s,
                    map,
                    "this `samplers` entry",
                    serde_fields::<RawSampler>(),
                    &[("sampler", "the sampler's name, e.g. `sampler: ddpm_cache`")],
                )?;
                for (k, x) in map.iter() {
                    let checked = match k.as_str() {
                        "sampler" => c.text(x, "sampler", "sampler: ddpm_cache"),
                        "steps" => c.distinct_wholes(
                            x,
                            "steps",
                            "steps",
                            (1, MAX_STEPS),
                            "steps: [1, 4, 16]",
                        ),
                        "schedule" => c.text(x, "schedule", "schedule: linear"),
                        "params" => c.settings(x, "params", "params: {block_length: 32}"),
                        _ => Ok(()),
                    };
                    c.at_key(k, x, checked)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a cell holds in memory, and how many cells there are, against the limits.
pub(super) fn check_sizes(
    suite: &Suite,
    top: &marked_yaml::types::MarkedMappingNode,
) -> Result<(), SuiteError> {
    let source = &suite.source;
    let longest = suite.lengths.iter().copied().max().unwrap_or(1) as u128;
    // Locate at the value that makes a product too large: the number if it was written,
    // otherwise the longest length.
    let length_node = top.get_sequence("lengths").and_then(|seq| {
        seq.iter()
            .find(|n| n.as_scalar().and_then(|s| s.as_str().parse::<u128>().ok()) == Some(longest))
    });
    let at = |key: &str| {
        top.get_node(key)
            .or(length_node)
            .map(|n| *n.span())
            .unwrap_or_else(marked_yaml::Span::new_blank)
    };

    let samples = suite.samples as u128;
    if samples * longest > MAX_CELL_TOKENS {
        return Err(SuiteError::at(
            source,
            &at("samples"),
            format!(
                "samples × length = {samples} × {longest} = {} tokens in one cell, about {} for the harness to hold; the limit is {MAX_CELL_TOKENS} tokens per cell ({}): lower `samples` or the length",
                samples * longest,
                gib((samples * longest) as f64 * BYTES_PER_HELD_TOKEN),
                gib(MAX_CELL_TOKENS as f64 * BYTES_PER_HELD_TOKEN),
            ),
        ));
    }
    let batch = suite.batch_size.min(suite.samples) as u128;
    if batch * longest > MAX_BATCH_TOKENS {
        return Err(SuiteError::at(
            source,
            &at("batch_size"),
            format!(
                "batch_size × length = {batch} × {longest} = {} tokens per generate call; a plugin holds batch × length × vocabulary probabilities of 8 bytes, at least {} even for a vocabulary of 8; the limit is {MAX_BATCH_TOKENS} tokens per batch: lower `batch_size`",
                batch * longest,
                gib((batch * longest) as f64 * 64.0),
            ),
        ));
    }
    let models = top.get_sequence("models");
    for (i, m) in suite.models.iter().enumerate() {
        let Some(t) = &m.train else { continue };
        let train = models
            .and_then(|seq| seq.get_node(i))
            .and_then(Node::as_mapping)
            .and_then(|map| map.get_mapping("train"));
        let at = |key: &str| {
            train
                .and_then(|map| map.get_node(key))
                .map(|n| *n.span())
                .or(m.train_span)
                .unwrap_or_else(marked_yaml::Span::new_blank)
        };
        let batch = t.batch_size as u128;
        if batch * longest > MAX_BATCH_TOKENS {
            return Err(SuiteError::at(
                source,
                &at("batch_size"),
                format!(
                    "train.batch_size × length = {batch} × {longest} = {} tokens per training step; the limit is {MAX_BATCH_TOKENS} (a model holds activations for every token of a step): lower `train.batch_size`",
                    batch * longest
                ),
            ));
        }
        let held = t.validation_samples as u128;
        if held * longest > MAX_CELL_TOKENS {
            return Err(SuiteError::at(
                source,
                &at("validation_samples"),
                format!(
                    "train.validation_samples × length = {held} × {longest} = {} tokens held for validation, about {}; the limit is {MAX_CELL_TOKENS} tokens: lower `train.validation_samples`",
                    held * longest,
                    gib((held * longest) as f64 * BYTES_PER_HELD_TOKEN),
                ),
            ));
        }
    }
    // Cells, counted without expanding the sweep.
    let mut per_length_seed: u128 = 0;
    for ti in 0..suite.tasks.len() {
        per_length_seed += u128::from(suite.reference);
        for m in suite.models.iter().filter(|m| m.tasks.contains(&ti)) {
            for &si in &m.samplers {
                per_length_seed += suite.samplers[si].steps.len().max(1) as u128;
            }
        }
    }
    let cells = per_length_seed * suite.lengths.len() as u128 * suite.seeds.len() as u128;
    if cells > MAX_CELLS {
        return Err(SuiteError::at(
            source,
            &top.get_node("seeds")
                .or(top.get_node("lengths"))
                .map(|n| *n.span())
                .unwrap_or_else(marked_yaml::Span::new_blank),
            format!(
                "the sweep has {cells} cells (seeds × lengths × tasks × (reference + models × samplers × steps)); the limit is {MAX_CELLS}, and each cell is a worker process: split the suite"
            ),
        ));
    }
    Ok(())
}

/// Two sampler entries with the same sampler, schedule and params must not share a step count
/// (their cells would run twice).
pub(super) fn check_repeated_samplers(
    source: &SuiteSource,
    raw: &[RawSampler],
    samplers: &[SamplerEntry],
) -> Result<(), SuiteError> {
    type Key = (String, Option<String>, String, Option<usize>);
    let mut seen: HashMap<Key, marked_yaml::Span> = HashMap::new();
    for (r, s) in raw.iter().zip(samplers) {
        let params = serde_json::to_string(&s.params).unwrap_or_default();
        let points: Vec<(Option<usize>, marked_yaml::Span)> = match &r.steps {
            Some(steps) => steps
                .iter()
                .map(|v| (Some(**v as usize), *v.span()))
                .collect(),
            None => vec![(None, *r.sampler.span())],
        };
        for (step, span) in points {
            let key = (s.sampler.clone(), s.schedule.clone(), params.clone(), step);
            if let Some(first) = seen.insert(key, span) {
                let at = first
                    .start()
                    .map(|m| format!("line {}:{}", m.line(), m.column()))
                    .unwrap_or_else(|| "earlier".into());
                let what = match step {
                    Some(n) => format!("sampler `{}` with {n} steps", s.sampler),
                    None => format!("sampler `{}`", s.sampler),
                };
                return Err(SuiteError::at(
                    source,
                    &span,
                    format!(
                        "{what} is already listed at {at} with the same schedule and params; its cells would run twice and write duplicate rows: remove one"
                    ),
                ));
            }
        }
    }
    Ok(())
}
