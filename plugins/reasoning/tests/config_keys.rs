//! Every task declares exactly the config keys it accepts (the harness refuses any other at
//! plan time), and the keys that name files are declared paths (the harness resolves them
//! against the suite file).

use dlm_reasoning::plugin::ReasoningPlugin;
use dlm_sdk::Plugin;

#[test]
fn every_task_declares_exactly_the_config_keys_it_accepts() {
    for info in ReasoningPlugin::tasks() {
        info.check_config_keys(|config| {
            ReasoningPlugin::open_task(&info.name, config)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn file_keys_are_paths() {
    let paths = |task: &str| -> Vec<String> {
        let info = ReasoningPlugin::tasks()
            .into_iter()
            .find(|t| t.name == task);
        let keys = info.map(|t| t.config_keys).unwrap_or_default();
        keys.into_iter()
            .filter(|k| k.path)
            .map(|k| k.name)
            .collect()
    };
    assert_eq!(paths("gsm8k"), ["data_dir"]);
    assert_eq!(paths("prompts"), ["path"]);
    assert!(paths("arith").is_empty());
}
