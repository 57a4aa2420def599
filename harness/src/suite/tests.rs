use super::*;

const GOOD: &str = r#"
name: t
samples: 10
lengths: [8, 16]
seeds: [0, 1]
tasks:
  - name: bigram
    plugin: dlm-formal
    task: ngram
    config: {order: 2, variant: ser, label: "007", temperature: 2.0}
models:
  - name: oracle
    plugin: ../lib/libx.so
    model: oracle
samplers:
  - sampler: ddpm_cache
    steps: [1, 4]
  - sampler: left_to_right
"#;

fn parse(text: &str) -> Result<Suite, SuiteError> {
    Suite::parse(Path::new("suites/t.yaml"), text.to_string())
}

#[test]
fn every_shipped_suite_parses_and_expands() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let suite = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!suite.cells().is_empty(), "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 3, "quick, cpu-fig1 and paper-fig1 at least");
    // Models with `tasks:` run only on those tasks, and trained models carry `train:`.
    let fig1 = Suite::load(&dir.join("paper-fig1.yaml")).unwrap();
    let cells = fig1.cells();
    let on = |model: &str, task: &str| {
        cells.iter().any(|c| {
            c.model
                .as_ref()
                .is_some_and(|m| m.name == model && m.train.is_some())
                && c.task.name == task
        })
    };
    assert!(on("mdm-10", "4gram") && !on("mdm-10", "2gram") && !on("mdm", "4gram"));
}

#[test]
fn parses_and_expands() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.lengths, vec![8, 16]);
    assert_eq!(s.tasks[0].config["order"], Value::from(2));
    assert_eq!(s.tasks[0].config["label"], Value::from("007"));
    assert_eq!(s.tasks[0].config["temperature"], Value::from(2.0));
    assert_eq!(
        s.models[0].plugin,
        PluginRef::Path(PathBuf::from("suites/../lib/libx.so"))
    );
    assert_eq!(s.tasks[0].plugin, PluginRef::Crate("dlm-formal".into()));
    let cells = s.cells();
    // 2 seeds × 2 lengths × (reference + 2 ddpm_cache steps + 1 left_to_right)
    assert_eq!(cells.len(), 2 * 2 * 4);
    let l2r: Vec<_> = cells
        .iter()
        .filter(|c| {
            c.sampler
                .as_ref()
                .is_some_and(|s| s.name == "left_to_right")
        })
        .collect();
    assert!(l2r
        .iter()
        .all(|c| c.sampler.as_ref().unwrap().steps == c.length));
    let ids: HashSet<_> = cells.iter().map(CellSpec::unit_id).collect();
    assert_eq!(ids.len(), cells.len(), "unit ids are unique");
}

fn error_of(text: &str) -> SuiteError {
    match parse(text) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn memory_limit_parses_and_bad_values_are_located() {
    assert_eq!(parse(GOOD).unwrap().memory_limit, MemoryLimit::Default);
    for (text, want) in [
        ("8GiB", MemoryLimit::Bytes(8 << 30)),
        ("512 MiB", MemoryLimit::Bytes(512 << 20)),
        ("1.5g", MemoryLimit::Bytes(3 << 29)),
        ("2GB", MemoryLimit::Bytes(2_000_000_000)),
        ("1048576", MemoryLimit::Bytes(1 << 20)),
        ("none", MemoryLimit::Unlimited),
    ] {
        let suite =
            parse(&GOOD.replace("samples: 10", &format!("samples: 10\nmemory_limit: {text}")));
        assert_eq!(suite.unwrap().memory_limit, want, "{text}");
    }
    let e = error_of(&GOOD.replace("samples: 10", "samples: 10\nmemory_limit: lots"));
    let l = e.location.clone().unwrap();
    assert_eq!((l.line, l.column), (4, 15), "{e}");
    assert!(e.to_string().contains("memory_limit must be a size"), "{e}");
    assert!(
        error_of(&GOOD.replace("samples: 10", "samples: 10\nmemory_limit: 0"))
            .to_string()
            .contains("memory_limit")
    );
}

#[test]
fn zero_steps_is_located() {
    let e = error_of(&GOOD.replace("steps: [1, 4]", "steps: [1, 0]"));
    let l = e.location.clone().unwrap();
    assert_eq!((l.line, l.column), (17, 16), "{e}");
    assert!(e.to_string().contains("steps must be at least 1"), "{e}");
    assert!(e.to_string().starts_with("suites/t.yaml:17:16:"), "{e}");
}

#[test]
fn unknown_key_is_located() {
    let e = error_of(&GOOD.replace("samples: 10", "sample: 10"));
    let l = e.location.clone().expect("located");
    assert_eq!(l.line, 3, "{e}");
    assert!(e.message.contains("sample"), "{e}");
}

#[test]
fn syntax_error_names_line() {
    let e = error_of("name: t\nlengths: [1, 2\ntasks: []\n");
    assert!(e.to_string().starts_with("suites/t.yaml"), "{e}");
    assert!(e.to_string().contains(':'), "{e}");
}

#[test]
fn wrong_type_is_located() {
    let e = error_of(&GOOD.replace("lengths: [8, 16]", "lengths: [8, sixteen]"));
    let l = e.location.clone().expect("located");
    assert_eq!(l.line, 4, "{e}");
}

#[test]
fn model_sampler_typo_suggests() {
    let e = error_of(&GOOD.replace(
        "    model: oracle",
        "    model: oracle\n    samplers: [ddpm_cach]",
    ));
    // The close name is the suite's own entry, which may be the typo: pointed at, not offered.
    assert!(
        e.message.contains("the list defines `ddpm_cache` (line"),
        "{e}"
    );
}

#[test]
fn every_test_suite_passes_the_stricter_checks() {
    // tests/suites/malformed/ holds the refused ones (tests/suite_errors.rs).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suites");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn serde_field_lists_are_probed() {
    // The shape checks learn the accepted keys from the serde structs themselves.
    assert!(serde_fields::<RawSuite>().contains(&"samplers"));
    assert!(serde_fields::<RawSuite>().contains(&"timeout_seconds"));
    assert!(serde_fields::<RawTask>().contains(&"config"));
    assert!(serde_fields::<RawModel>().contains(&"train"));
    assert!(serde_fields::<RawSampler>().contains(&"params"));
}

#[test]
fn a_config_for_a_model_and_null_settings_still_parse() {
    let s = parse(&GOOD.replace(
        "    model: oracle",
        "    model: oracle\n    config:\n    samplers: [ddpm_cache, left_to_right]",
    ))
    .unwrap();
    assert_eq!(s.models[0].config, Value::Null);
    assert_eq!(s.models[0].samplers, vec![0, 1]);
}

#[test]
fn a_model_naming_a_sampler_gets_every_entry_of_it() {
    // Two `low_confidence` entries (with and without blocks): naming it selects both.
    let s = parse(&GOOD.replace(
        "  - sampler: left_to_right\n",
        "  - sampler: left_to_right\n  - sampler: ddpm_cache\n    steps: [8]\n    params: {block_length: 4}\n",
    ).replace("    model: oracle", "    model: oracle\n    samplers: [ddpm_cache]"))
    .unwrap();
    assert_eq!(s.models[0].samplers, vec![0, 2]);
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        "[]",
        "- 1\n- 2",
        "name: [1]",
        ":",
        "name: t\nlengths: 3\n",
        "\t\tx",
        "name: t\ntasks: {a: 1}",
    ] {
        assert!(parse(text).is_err(), "{text:?}");
    }
}

#[test]
fn doc_selections_parse_join_the_task_identity_and_are_checked() {
    let with = |docs: &str| {
        GOOD.replace(
            "    task: ngram\n",
            &format!("    task: ngram\n    {docs}\n"),
        )
    };
    let plain = parse(GOOD).unwrap();
    let ids = parse(&with("doc_ids: [HumanEval/3, 11]")).unwrap();
    let from = parse(&with("docs_from_replay: true")).unwrap();
    let off = parse(&with("docs_from_replay: false")).unwrap();
    assert_eq!(
        ids.tasks[0].docs,
        Some(DocSelection::Ids(vec!["HumanEval/3".into(), "11".into()]))
    );
    assert_eq!(from.tasks[0].docs, Some(DocSelection::FromReplay));
    assert_eq!(off.tasks[0].docs, None);
    // A selection changes which samples a cell holds, so its unit id; no selection keeps the
    // ids cells had before selections existed.
    let unit = |s: &Suite| s.cells()[0].unit_id();
    assert_ne!(unit(&plain), unit(&ids));
    assert_ne!(unit(&ids), unit(&from));
    assert_eq!(unit(&plain), unit(&off));
    // Models carry the suite's folder, absolute, for relative paths in their configs.
    let model = plain.cells().into_iter().find_map(|c| c.model).unwrap();
    let base = model.base_dir.unwrap();
    assert!(base.is_absolute() && base.ends_with("suites"), "{base:?}");

    let e = error_of(&with("doc_ids: [HumanEval/3]\n    docs_from_replay: true"));
    assert!(e.to_string().contains("not both"), "{e}");
    let e = error_of(&with("doc_ids: []"));
    assert!(e.to_string().contains("`doc_ids` is empty"), "{e}");
    let e = error_of(&with("doc_ids: [a, a]"));
    assert!(e.to_string().contains("names `a` twice"), "{e}");
    let e = error_of(&with("docs_from_replay: yes please"));
    assert!(
        e.to_string()
            .contains("`docs_from_replay` must be `true` or `false`"),
        "{e}"
    );
}

#[test]
fn config_keys_are_checked_where_written_and_paths_joined_to_the_suite_folder() {
    use dlm_plugin_api::{ComponentInfo, ConfigKey};
    let suite = parse(GOOD).unwrap();
    let task = &suite.tasks[0];
    // Each key with its own line and column.
    let keys: Vec<(&str, usize, usize)> = task
        .config_keys
        .iter()
        .map(|(k, span)| {
            let m = span.start().unwrap();
            (k.as_str(), m.line(), m.column())
        })
        .collect();
    // Where each key stands in the suite text (1-based).
    let (row, line) = GOOD
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("config: {order"))
        .unwrap();
    let at = |key: &'static str| (key, row + 1, line.find(&format!("{key}:")).unwrap() + 1);
    assert_eq!(
        keys,
        [at("order"), at("variant"), at("label"), at("temperature")]
    );
    let declared = |names: &[&str]| {
        names
            .iter()
            .fold(ComponentInfo::new("ngram", ""), |info, n| {
                info.with_config_key(ConfigKey::new(*n))
            })
    };
    let check = |info: &ComponentInfo| {
        check_config_keys(&suite.source, &task.config_keys, info, "task `bigram`")
    };
    // Nothing declared: nothing checked.
    assert!(check(&ComponentInfo::new("ngram", "")).is_ok());
    assert!(check(&declared(&["order", "variant", "label", "temperature"])).is_ok());
    let e = check(&declared(&["order", "variant", "labels", "temperature"])).unwrap_err();
    let (_, line, column) = at("label");
    assert_eq!(
        e.location.as_ref().map(|l| (l.line, l.column)),
        Some((line, column))
    );
    assert!(
        e.to_string()
            .contains("takes no config key `label`; did you mean `labels`?"),
        "{e}"
    );

    // Paths: relative ones joined (alone or in a list), absolute ones and other keys kept.
    let info = declared(&["n"])
        .with_config_key(ConfigKey::path("file"))
        .with_config_key(ConfigKey::path("files"));
    let config = serde_json::json!({
        "file": "data/x.jsonl", "files": ["a.txt", "/abs/b.txt"], "n": "data/not-a-path",
    });
    let base = Path::new("/suites/sub");
    assert_eq!(
        resolve_paths(&config, &info, Some(base)),
        serde_json::json!({
            "file": "/suites/sub/data/x.jsonl",
            "files": ["/suites/sub/a.txt", "/abs/b.txt"],
            "n": "data/not-a-path",
        })
    );
    assert_eq!(resolve_paths(&config, &info, None), config);
    // Tasks carry the suite's folder too.
    let cell_task = &suite.cells()[0].task;
    assert_eq!(cell_task.base_dir.as_deref(), Some(task.base_dir.as_path()));
}

#[test]
fn a_length_override_must_agree_within_each_task_only() {
    use dlm_plugin_api::ComponentInfo;
    let text_models = |lengths: &str, third: &str| {
        format!(
            "name: t
lengths: {lengths}
tasks:
  - {{name: a, plugin: dlm-x, task: q}}
  - {{name: b, plugin: dlm-x, task: q}}
models:
  - {{name: fixed, plugin: dlm-x, model: m, tasks: [a], config: {{generation_length: 32}}}}
  - {{name: whole, plugin: dlm-x, model: m, tasks: [b]}}
{third}samplers:
  - {{sampler: ar}}
"
        )
    };
    let overriding = ComponentInfo::new("m", "").with_length_override("generation_length");
    let plain = ComponentInfo::new("m", "");
    let check = |yaml: &str, info: &ComponentInfo| {
        check_length_overrides(&parse(yaml).unwrap(), |_| Some(info))
    };
    // Each task's models agree (`fixed` runs only `a`, `whole` only `b`); a plugin that
    // declares no override is not judged.
    assert!(check(&text_models("[64]", ""), &overriding).is_ok());
    let mixed = text_models(
        "[64]",
        "  - {name: late, plugin: dlm-x, model: m, tasks: [a], config: {generation_length: null}}\n",
    );
    assert!(check(&mixed, &plain).is_ok());
    // `late` runs task `a` beside `fixed` with no region (null is unset): refused at `fixed`'s key.
    let e = check(&mixed, &overriding).unwrap_err();
    let line = mixed
        .lines()
        .position(|l| l.contains("generation_length: 32"))
        .unwrap();
    let column = mixed
        .lines()
        .nth(line)
        .unwrap()
        .find("generation_length")
        .unwrap();
    assert_eq!(
        e.location.as_ref().map(|l| (l.line, l.column)),
        Some((line + 1, column + 1))
    );
    assert!(
        e.message.contains(
            "model `late` (line 9), which also runs task `a`, has no `generation_length`"
        ),
        "{e}"
    );
    // Several lengths beside a set override repeat the same cells.
    let e = check(&text_models("[64, 128]", ""), &overriding).unwrap_err();
    assert!(e.message.contains("with `lengths: [64, 128]`"), "{e}");
    assert!(check(&text_models("[64, 128]", ""), &plain).is_ok());
}
