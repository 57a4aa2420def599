//! Both models declare exactly the config keys they accept (the harness refuses any other at
//! plan time), and `path` is a declared path (the harness resolves it against the suite file).

use dlm_hf::HfPlugin;
use dlm_sdk::{ModelOpenConfig, Plugin, TaskBinding, TaskDescription, TextTaskInfo};

fn open_config(config: serde_json::Value) -> ModelOpenConfig {
    let mut description = TaskDescription::new("text", 0, 64);
    description.text = Some(TextTaskInfo::new(vec![]));
    ModelOpenConfig {
        config,
        task: TaskBinding {
            plugin: "test".into(),
            task: "text".into(),
            config: serde_json::Value::Null,
            description,
        },
        train: None,
        checkpoint: None,
        base_dir: None,
    }
}

#[test]
fn every_model_declares_exactly_the_config_keys_it_accepts() {
    let models = HfPlugin::models();
    assert_eq!(models.len(), 2);
    for info in models {
        info.check_config_keys(|config| {
            HfPlugin::open_model(&info.name, open_config(config))
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let paths: Vec<&str> = info
            .config_keys
            .iter()
            .filter(|k| k.path)
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(paths, ["path"], "{}", info.name);
        // `generation_length` replaces the suite's `lengths`, so the harness can refuse a
        // suite that gives `lengths` two meanings for one task.
        let replacing: Vec<&str> = info
            .config_keys
            .iter()
            .filter(|k| k.replaces_lengths)
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(replacing, ["generation_length"], "{}", info.name);
    }
}
