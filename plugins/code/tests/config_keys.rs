//! Every task declares exactly the config keys it accepts (the harness refuses any other at
//! plan time), and `data_dir` is a declared path (the harness resolves it against the suite
//! file).

use dlm_code::plugin::CodePlugin;
use dlm_sdk::Plugin;

#[test]
fn every_task_declares_exactly_the_config_keys_it_accepts() {
    let tasks = CodePlugin::tasks();
    assert_eq!(tasks.len(), 3);
    for info in tasks {
        info.check_config_keys(|config| {
            CodePlugin::open_task(&info.name, config)
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
        assert_eq!(paths, ["data_dir"], "{}", info.name);
    }
}
