//! The harness never interprets a sampler's name: what it needs to know (one step per token,
//! parameters) comes from the plugin's descriptor (`ComponentInfo::sampler_info`, filled in by
//! the SDK). This test fails when a sampler name appears as a string literal in the harness's
//! code outside its test modules.

mod common;
use common::*;

/// The SDK's sampler names, read from its source (`SAMPLERS`), plus the AR sampler.
fn sampler_names() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("harness/sdk/src/sampler.rs")).unwrap();
    let start = text
        .find("pub const SAMPLERS: &[&str] = &[")
        .expect("SAMPLERS in the SDK");
    let end = start + text[start..].find("];").unwrap();
    let mut names: Vec<String> = text[start..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    names.push("ar".into());
    assert!(names.len() >= 9, "{names:?}");
    names
}

#[test]
fn no_sampler_name_in_the_harness_code() {
    let names = sampler_names();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root().join("harness/src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Code before the unit tests.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (i, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for n in &names {
                // A config key that happens to share a sampler's name (`.get("threshold")`)
                // is not a sampler name.
                let literal = format!("\"{n}\"");
                let keyed = format!("get({literal})");
                if line.contains(&literal) && !line.contains(&keyed) {
                    found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "sampler names interpreted by the harness (describe them in the SDK instead):\n{}",
        found.join("\n")
    );
}
