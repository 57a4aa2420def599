//! Both models declare exactly the config keys they accept (the harness refuses any other at
//! plan time), and `checkpoint` and `tokenizer` are declared paths (the harness resolves
//! them against the suite file).

use dlm_neural::NeuralPlugin;
use dlm_sdk::{ModelOpenConfig, Plugin, TaskBinding, TaskDescription};

fn open_config(config: serde_json::Value) -> ModelOpenConfig {
    let description = TaskDescription::new("tokens", 8, 16);
    ModelOpenConfig {
        config,
        task: TaskBinding {
            plugin: "test".into(),
            task: "tokens".into(),
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
    let models = NeuralPlugin::models();
    assert_eq!(models.len(), 2);
    for info in models {
        info.check_config_keys(|config| {
            NeuralPlugin::open_model(&info.name, open_config(config))
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
        assert_eq!(paths, ["checkpoint", "tokenizer"], "{}", info.name);
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
