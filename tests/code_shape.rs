//! The code stays in readable pieces (issues 13 and 33) across `harness/` (the harness, the
//! SDK, the plugin API) and `plugins/` (every plugin's src, tests, benches and examples):
//!
//! * no file over 800 lines, no function over 150. A function is measured from its `fn` line to
//!   the closing brace at the same indentation, as rustfmt lays it out;
//! * no import circles between the modules of a crate's `src`: module A uses B when A's code
//!   names a path into B with `crate::…` or `super::…` (in a `use` or inline). A module counts
//!   with its submodules, so a use is an edge between the two sibling subtrees it crosses; a
//!   module's use of its own submodules or ancestors is the module tree, not an edge.

mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 800;
const MAX_FUNCTION_LINES: usize = 150;

/// The trees the rules cover.
const CHECKED: &[&str] = &["harness", "plugins"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn checked_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in CHECKED {
        rust_files(&root().join(dir), &mut files);
    }
    files.sort();
    files
}

/// `(name, first line, length)` of every function in `text`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let rest = line.trim_start();
        let rest = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub(super) "))
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, i + 1, end + 2));
        }
    }
    out
}

#[test]
fn the_measure_finds_functions_and_their_length() {
    let text = "fn a() {\n    1;\n}\n\nimpl X {\n    pub(super) fn b(&self) {\n        if x {\n        }\n    }\n}\n";
    let found = functions(text);
    assert_eq!(
        found,
        vec![("a".to_string(), 1, 3), ("b".to_string(), 6, 4)]
    );
}

#[test]
fn no_long_files_or_functions_in_harness_or_plugins() {
    let files = checked_files();
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root()).unwrap_or(file).display();
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            problems.push(format!(
                "{shown}: {lines} lines (at most {MAX_FILE_LINES}; split it by concern)"
            ));
        }
        for (name, line, length) in functions(&text) {
            if length > MAX_FUNCTION_LINES {
                problems.push(format!(
                    "{shown}:{line}: fn {name} is {length} lines (at most {MAX_FUNCTION_LINES}; break it into named steps)"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Module import circles.

/// A module's path in its crate (`[]` is the crate root).
type Module = Vec<String>;

/// The module a file under `src/` defines: `a/b.rs` and `a/b/mod.rs` are `a::b`, `lib.rs` is the
/// root. `None` for files that are not modules of the library (binaries).
fn module_of(relative: &str) -> Option<Module> {
    let stem = relative.strip_suffix(".rs")?;
    let mut parts: Module = stem.split('/').map(str::to_string).collect();
    if parts.first().is_some_and(|p| p == "bin") || stem == "main" {
        return None;
    }
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    Some(parts)
}

/// `text` with comments, string literals and character literals blanked (lines kept), so
/// that only code is searched for paths.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !ident_before(&chars, i) {
            // A raw string: r"…", r#"…"#, …
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let end: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let body_start = i + 2 + hashes;
            let rest: String = chars[body_start..].iter().collect();
            let body = rest.find(&end).map_or(rest.len(), |e| e + end.len());
            let skipped = 2 + hashes + rest[..body].chars().count();
            for &s in &chars[i..(i + skipped).min(chars.len())] {
                out.push(blank(s));
            }
            i += skipped;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for &s in &chars[i..(i + step).min(chars.len())] {
                    out.push(blank(s));
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let literal_len = if next == Some('\\') {
                chars[i + 3..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map(|p| p + 4)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match literal_len {
                Some(n) => {
                    out.push_str(&" ".repeat(n));
                    i += n;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && is_ident(chars[i - 1])
}

/// The paths of a `use` tree (`a::{b, c::{d as e}, self}` → `a::b`, `a::c::d`, `a`).
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![path
            .split("::")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && s != "self" && s != "*")
            .collect()];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut current) = (Vec::new(), 0, String::new());
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    let mut out = Vec::new();
    for part in parts.iter().filter(|p| !p.trim().is_empty()) {
        for tail in use_paths(part) {
            out.push(prefix.iter().cloned().chain(tail).collect());
        }
    }
    out
}

/// Every `crate::…`/`super::…` path in `code` (comments and strings already blanked), with
/// its line (1-based): those of `use` items, then those written inline.
fn crate_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut rest = code.to_string();
    let mut search = 0;
    while let Some(found) = rest[search..].find("use ") {
        let at = search + found;
        let starts_word = at == 0 || !rest[..at].ends_with(is_ident);
        let Some(end) = rest[at..].find(';').map(|e| at + e) else {
            break;
        };
        if starts_word {
            for path in use_paths(&rest[at + 4..end]) {
                out.push((line_of(at), path));
            }
            let blanked: String = rest[at..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            rest.replace_range(at..end, &blanked);
        }
        search = at + 4;
    }
    let chars: Vec<(usize, char)> = rest.char_indices().collect();
    for (k, &(at, _)) in chars.iter().enumerate() {
        let start = &rest[at..];
        if !(start.starts_with("crate::") || start.starts_with("super::")) {
            continue;
        }
        if k > 0 && (is_ident(chars[k - 1].1) || chars[k - 1].1 == ':') {
            continue;
        }
        let path: String = start
            .chars()
            .take_while(|&c| is_ident(c) || c == ':')
            .collect();
        let segments = path
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        out.push((line_of(at), segments));
    }
    out
}

/// The inline modules (`mod name {` … `}` at the same indentation) of `text`:
/// `(first line, last line, name)`, 1-based.
fn inline_modules(text: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let rest = line.trim_start();
        let rest = rest.strip_prefix("pub ").unwrap_or(rest);
        let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.strip_suffix(" {")) else {
            continue;
        };
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((i + 1, i + end + 2, name.to_string()));
        }
    }
    out
}

/// One use of a module: where, and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Evidence {
    file: String,
    line: usize,
    path: String,
}

/// The sibling subtrees a use crosses, keyed by (from, to), with where each is written.
type Edges = BTreeMap<(Module, Module), Vec<Evidence>>;

/// The edges between the modules of one crate; `files` are `(path relative to src, text)`.
fn module_edges(files: &[(String, String)]) -> Edges {
    let modules: BTreeMap<Module, &str> = files
        .iter()
        .filter_map(|(name, text)| module_of(name).map(|m| (m, text.as_str())))
        .collect();
    let mut known: BTreeSet<Module> = modules.keys().cloned().collect();
    let mut edges = Edges::new();
    for (name, text) in files {
        let Some(module) = module_of(name) else {
            continue;
        };
        let inline = inline_modules(text);
        for (_, _, inner) in &inline {
            known.insert(module.iter().cloned().chain([inner.clone()]).collect());
        }
        for (line, path) in crate_paths(&code_only(text)) {
            // The module the path is written in: the file's, inside its inline modules.
            let mut here = module.clone();
            for (first, last, inner) in &inline {
                if (*first..=*last).contains(&line) {
                    here.push(inner.clone());
                }
            }
            let Some(target) = resolve(&here, &path, &known) else {
                continue;
            };
            let common = here.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == here.len() || common == target.len() {
                continue;
            }
            edges
                .entry((here[..=common].to_vec(), target[..=common].to_vec()))
                .or_default()
                .push(Evidence {
                    file: name.clone(),
                    line,
                    path: path.join("::"),
                });
        }
    }
    edges
}

/// The module a `crate::…`/`super::…` path written in `here` points into: the longest prefix
/// of it that is a known module.
fn resolve(here: &Module, path: &[String], known: &BTreeSet<Module>) -> Option<Module> {
    let mut base: Module = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "super" => here[..here.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    for segment in rest {
        let deeper: Module = base.iter().cloned().chain([segment.clone()]).collect();
        if !known.contains(&deeper) {
            break;
        }
        base = deeper;
    }
    Some(base)
}

/// The import circles of one crate, one line each: its modules and the uses that close it.
fn circles(files: &[(String, String)]) -> Vec<String> {
    let edges = module_edges(files);
    let nodes: BTreeSet<&Module> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reaches = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for (a, b) in edges.keys() {
                if *a == m && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&Module, BTreeSet<Module>> =
        nodes.iter().map(|&m| (m, reaches(m))).collect();
    let mut reported: BTreeSet<Module> = BTreeSet::new();
    let mut out = Vec::new();
    for &m in &nodes {
        if reported.contains(m) || !reach[m].contains(m) {
            continue;
        }
        let members: BTreeSet<Module> = nodes
            .iter()
            .filter(|&&n| reach[m].contains(n) && reach[n].contains(m))
            .map(|&n| n.clone())
            .collect();
        let show = |m: &Module| {
            if m.is_empty() {
                "crate".to_string()
            } else {
                m.join("::")
            }
        };
        let uses: Vec<String> = edges
            .iter()
            .filter(|((a, b), _)| members.contains(a) && members.contains(b))
            .map(|((a, b), ev)| {
                let first = &ev[0];
                format!(
                    "{} -> {} ({}:{} `{}`)",
                    show(a),
                    show(b),
                    first.file,
                    first.line,
                    first.path
                )
            })
            .collect();
        out.push(format!(
            "{{{}}}: {}",
            members.iter().map(show).collect::<Vec<_>>().join(", "),
            uses.join("; ")
        ));
        reported.extend(members);
    }
    out
}

/// The `src` folder of every crate under the checked trees.
fn crate_sources() -> Vec<PathBuf> {
    // The harness's own crate has its manifest at the workspace root.
    let mut out = vec![root().join("harness/src")];
    for dir in CHECKED {
        let mut stack = vec![root().join(dir)];
        while let Some(d) = stack.pop() {
            if d.join("Cargo.toml").is_file() && d.join("src").is_dir() {
                out.push(d.join("src"));
            }
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if path.is_dir()
                    && !matches!(
                        name,
                        "src" | "target" | "tests" | "benches" | "data" | "fixtures"
                    )
                {
                    stack.push(path);
                }
            }
        }
    }
    out.sort();
    out
}

fn sources_of(src: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .iter()
        .map(|f| {
            let relative = f
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (relative, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

#[test]
fn no_module_import_circles_in_harness_or_plugins() {
    let crates = crate_sources();
    assert!(
        crates.len() >= 8,
        "found only {} crates: {crates:?}",
        crates.len()
    );
    let (mut problems, mut edges) = (Vec::new(), 0);
    for src in &crates {
        let shown = src
            .strip_prefix(root())
            .unwrap_or(src)
            .display()
            .to_string();
        let files = sources_of(src);
        edges += module_edges(&files).len();
        for circle in circles(&files) {
            problems.push(format!(
                "{shown}: {circle} (move what both need to the module it belongs to, or to a new one both use)"
            ));
        }
    }
    // The sibling modules of the workspace use each other in well over a hundred ways: a parser
    // that found few would be missing them, not proving their absence.
    assert!(edges > 100, "only {edges} uses between modules found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn synthetic(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

#[test]
fn the_measure_finds_circles_and_only_circles() {
    let crate_with = |b: &str| {
        synthetic(&[
            ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub use a::A;\n"),
            (
                "a/mod.rs",
                "mod inner;\nuse crate::c::C;\n// crate::b::B in a comment\nconst S: &str = \"crate::b::B\";\npub struct A;\n",
            ),
            ("a/inner.rs", "use super::A;\nuse crate::a::A as Same;\n"),
            ("b.rs", b),
            (
                "c.rs",
                "pub struct C;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::c::C as Same;\n}\n",
            ),
        ])
    };
    // Parent and child, comments, strings: no edges that close a circle.
    assert_eq!(
        circles(&crate_with("pub struct B;\n")),
        Vec::<String>::new()
    );
    // b → a and b → c alone close nothing; a → b (written in a submodule's file) closes one.
    let found = circles(&crate_with(
        "pub struct B(crate::a::A);\nfn f() -> crate::c::C { crate::c::C }\n",
    ));
    assert_eq!(found, Vec::<String>::new(), "b → a alone is no circle");
    let mut files = crate_with("pub struct B(crate::a::A);\n");
    files[2].1.push_str("fn g(_: super::super::b::B) {}\n");
    let found = circles(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(
            "{a, b}: a -> b (a/inner.rs:3 `super::super::b::B`); b -> a (b.rs:1 `crate::a::A`)"
        ),
        "{}",
        found[0]
    );
    // A circle through three modules, and a `use` group.
    let three = synthetic(&[
        ("x.rs", "use crate::{y::Y, z};\n"),
        ("y.rs", "pub struct Y;\nfn f() { super::z::g() }\n"),
        ("z.rs", "pub fn g() { let _ = crate::x::X; }\n"),
    ]);
    let found = circles(&three);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("{x, y, z}: "), "{}", found[0]);
}

// ---------------------------------------------------------------------------------------------
// Lints: one set for the workspace.

/// The crate this manifest names inherits the workspace's lints (`[lints]` with
/// `workspace = true`).
fn inherits_workspace_lints(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && line.replace(' ', "") == "workspace=true" {
            return true;
        }
    }
    false
}

#[test]
fn the_lint_measure_reads_manifests() {
    assert!(inherits_workspace_lints(
        "[package]\nname = \"x\"\n\n[lints]\nworkspace = true\n"
    ));
    assert!(!inherits_workspace_lints("[package]\nname = \"x\"\n"));
    assert!(!inherits_workspace_lints(
        "[lints.rust]\nunsafe_code = \"allow\"\n[features]\nworkspace = true\n"
    ));
}

/// Every crate of the workspace but the plugin API (the one crate allowed `unsafe`, see its
/// manifest) inherits the workspace's lints, so `unsafe_code` is forbidden in each of them —
/// a new plugin included.
#[test]
fn every_crate_but_the_plugin_api_inherits_the_workspace_lints() {
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(
        workspace.contains("[workspace.lints.rust]\n")
            && workspace.contains("unsafe_code = \"forbid\""),
        "the workspace forbids unsafe_code"
    );
    let mut manifests = vec![root().join("Cargo.toml")];
    for dir in ["harness", "plugins", "tests/fixtures"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let manifest = entry.unwrap().path().join("Cargo.toml");
            if manifest.is_file() {
                manifests.push(manifest);
            }
        }
    }
    assert!(manifests.len() >= 10, "found {manifests:?}");
    let missing: Vec<String> = manifests
        .iter()
        .filter(|m| !m.ends_with("harness/plugin-api/Cargo.toml"))
        .filter(|m| !inherits_workspace_lints(&std::fs::read_to_string(m).unwrap()))
        .map(|m| m.strip_prefix(root()).unwrap_or(m).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "without `[lints] workspace = true`: {}",
        missing.join(", ")
    );
    // The plugin API denies `unsafe` itself and lifts it for its loader module only.
    let api = std::fs::read_to_string(root().join("harness/plugin-api/src/lib.rs")).unwrap();
    assert!(
        api.contains("#![deny(unsafe_code)]")
            && api.contains("#[allow(unsafe_code)]\npub mod abi;"),
        "harness/plugin-api/src/lib.rs must deny unsafe_code and allow it for `abi` only"
    );
    assert_eq!(
        api.matches("allow(unsafe_code)").count(),
        1,
        "only the `abi` module of the plugin API may use `unsafe`"
    );
}
