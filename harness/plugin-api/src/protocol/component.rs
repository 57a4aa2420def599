//! What a plugin says it provides: the descriptor `describe` returns and each component in it.

use super::ComponentKind;
use serde::{Deserialize, Serialize};

/// What `describe` returns: the plugin and every component it provides (the SDK builds it from
/// a plugin's `Plugin` implementation); `#[non_exhaustive]` keeps later fields compatible.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PluginDescriptor {
    /// Plugin name, e.g. `dlm-formal`; must equal the name in the descriptor static (by
    /// convention the crate name). Suites and run manifests refer to plugins by it.
    pub name: String,
    /// Plugin version (by convention the crate version); recorded in every run's manifest, and
    /// a changed version makes `--resume` refuse to mix results.
    pub version: String,
    /// API version the plugin was built against, `major.minor`.
    pub api_version: String,
    /// One line for `dlm-bench list`.
    #[serde(default)]
    pub description: String,
    /// Tasks the plugin provides (names unique among its tasks).
    #[serde(default)]
    pub tasks: Vec<ComponentInfo>,
    /// Models the plugin provides (names unique among its models).
    #[serde(default)]
    pub models: Vec<ComponentInfo>,
    /// Compute device the plugin's models run on by default (e.g. `cpu`).
    #[serde(default)]
    pub device: String,
}

impl PluginDescriptor {
    /// The descriptor of plugin `name` at `version`, built against this crate's
    /// [`API_VERSION`](crate::API_VERSION), with no components yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        PluginDescriptor {
            name: name.into(),
            version: version.into(),
            api_version: crate::API_VERSION.to_string(),
            ..PluginDescriptor::default()
        }
    }

    /// The task or model called `name`, if the plugin provides it.
    pub fn component(&self, kind: ComponentKind, name: &str) -> Option<&ComponentInfo> {
        let list = match kind {
            ComponentKind::Task => &self.tasks,
            ComponentKind::Model => &self.models,
        };
        list.iter().find(|c| c.name == name)
    }
}

/// One task or model a plugin provides. Build it with [`ComponentInfo::new`] (or the SDK's
/// `denoiser_component`); `#[non_exhaustive]` keeps later fields compatible.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ComponentInfo {
    /// Name used in suites (`task:` / `model:`) and in `open`.
    pub name: String,
    /// One line for `dlm-bench list`.
    #[serde(default)]
    pub description: String,
    /// Optional capabilities, e.g. `train`, `loglikelihood`, `time_conditioned`, `oracle`,
    /// `autoregressive` (the model is an AR model: speedups are measured against it).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Sampler names a model supports (empty for tasks).
    #[serde(default)]
    pub samplers: Vec<String>,
    /// What the harness needs to know about each of those samplers (the SDK fills it in), so
    /// that the harness never interprets a sampler's name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sampler_info: Vec<SamplerInfo>,
    /// The keys the component's `config:` takes. When any is declared, the harness refuses
    /// any other key at plan time (with its line in the suite and a did-you-mean), and joins a
    /// relative value of a `path` key to the suite file's folder before the config reaches
    /// the plugin. Empty: the harness checks nothing and passes the config as written.
    /// Since API 1.5.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_keys: Vec<ConfigKey>,
}

/// One key of a component's `config:` (see [`ComponentInfo::config_keys`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConfigKey {
    /// The key as suites write it.
    pub name: String,
    /// Its value is a file or folder (a string, or a list of strings): a relative one means
    /// relative to the suite file, and the harness hands the plugin the joined path.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path: bool,
    /// When set, the key's value replaces the suite's `lengths` for the component's cells
    /// (e.g. a text model's `generation_length`: every prompt gets that many completion
    /// positions, and the cell's length only labels it). The harness then refuses, at plan
    /// time, a suite whose models of one task would give `lengths` different meanings (one
    /// sets the key, another leaves it out or sets another value) or whose several lengths
    /// would repeat the same cells. Since API 1.6 (older hosts ignore it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaces_lengths: bool,
}

impl ConfigKey {
    /// A key whose value is not a path.
    pub fn new(name: impl Into<String>) -> Self {
        ConfigKey {
            name: name.into(),
            path: false,
            replaces_lengths: false,
        }
    }

    /// A key whose value is a path (or a list of paths), relative to the suite file.
    pub fn path(name: impl Into<String>) -> Self {
        ConfigKey {
            name: name.into(),
            path: true,
            replaces_lengths: false,
        }
    }

    /// The same key, marked as replacing the suite's `lengths` when set (see
    /// [`ConfigKey::replaces_lengths`]).
    pub fn replacing_lengths(mut self) -> Self {
        self.replaces_lengths = true;
        self
    }
}

/// One sampler as the harness sees it: how `steps` applies and which parameters it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerInfo {
    /// The name suites use (`sampler:`).
    pub name: String,
    /// It decodes one token per step, left to right (an AR model's sampler, or left-to-right
    /// decoding of a denoiser): a suite gives it no `steps` (the harness uses the length), and
    /// its cells are the autoregressive baselines of speedups and verdicts.
    pub one_step_per_token: bool,
    /// Names of the `params:` it accepts.
    #[serde(default)]
    pub params: Vec<String>,
    /// A suite may leave out `steps` (then the cell's step count is the length), e.g. a model
    /// replaying generations that carry no step count. Since API 1.2.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steps_optional: bool,
}

impl ComponentInfo {
    /// A component called `name` with no capabilities or samplers yet (add them with
    /// [`ComponentInfo::with_capability`] and [`ComponentInfo::with_sampler`]).
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ComponentInfo {
            name: name.into(),
            description: description.into(),
            ..ComponentInfo::default()
        }
    }

    /// The same component with one more sampler (its name in `samplers`, its description in
    /// `sampler_info`).
    pub fn with_sampler(mut self, info: SamplerInfo) -> Self {
        self.samplers.push(info.name.clone());
        self.sampler_info.push(info);
        self
    }

    /// The same component taking one more config key (see [`ComponentInfo::config_keys`];
    /// [`ComponentInfo::with_config_of`] declares a config struct's keys at once).
    pub fn with_config_key(mut self, key: ConfigKey) -> Self {
        self.config_keys.push(key);
        self
    }

    /// The same component taking the config keys of `T`, the struct its `open` deserialises
    /// the config into (serde-derived, so the list cannot drift from what `open` accepts);
    /// those named in `path_keys` are paths. A name in `path_keys` that `T` has no field for
    /// is declared anyway, so [`ComponentInfo::check_config_keys`] reports it.
    pub fn with_config_of<T: serde::de::DeserializeOwned>(mut self, path_keys: &[&str]) -> Self {
        let fields = struct_fields::<T>();
        self.config_keys = fields
            .iter()
            .map(|f| match path_keys.contains(f) {
                true => ConfigKey::path(*f),
                false => ConfigKey::new(*f),
            })
            .collect();
        for p in path_keys.iter().filter(|p| !fields.contains(p)) {
            self.config_keys.push(ConfigKey::path(*p));
        }
        self
    }

    /// The same component with its config key `name` marked as replacing the suite's
    /// `lengths` when set (see [`ConfigKey::replaces_lengths`]); declared if it was not yet.
    /// Call it after [`ComponentInfo::with_config_of`], which replaces the declared keys.
    pub fn with_length_override(mut self, name: &str) -> Self {
        match self.config_keys.iter_mut().find(|k| k.name == name) {
            Some(key) => key.replaces_lengths = true,
            None => self
                .config_keys
                .push(ConfigKey::new(name).replacing_lengths()),
        }
        self
    }

    /// Check the declared [`config_keys`](Self::config_keys) against what the component
    /// really accepts, for a plugin's tests: `open` opens the component with a config and
    /// returns its error message, if any. Every declared key must be accepted (its value may
    /// be refused, but not the key), and an undeclared key must be refused by name.
    pub fn check_config_keys(
        &self,
        mut open: impl FnMut(serde_json::Value) -> Result<(), String>,
    ) -> Result<(), String> {
        const PROBE: &str = "dlm_bench_undeclared_probe";
        let refuses = |message: &str, key: &str| {
            message.contains("unknown") && message.contains(&format!("`{key}`"))
        };
        if self.config_keys.is_empty() {
            return Err(format!("`{}` declares no config keys", self.name));
        }
        for key in &self.config_keys {
            // An array of a string: a path for path keys, a type error for most others; either
            // way the key itself is not what is refused.
            if let Err(message) = open(serde_json::json!({ &key.name: ["probe"] })) {
                if refuses(&message, &key.name) {
                    return Err(format!(
                        "`{}` declares config key `{}` but refuses it: {message}",
                        self.name, key.name
                    ));
                }
            }
        }
        match open(serde_json::json!({ PROBE: 0 })) {
            Err(message) if refuses(&message, PROBE) => Ok(()),
            Err(message) => Err(format!(
                "`{}` refused an undeclared key without naming it: {message}",
                self.name
            )),
            Ok(()) => Err(format!(
                "`{}` accepted the undeclared key `{PROBE}`",
                self.name
            )),
        }
    }

    /// Whether the component declares `capability` (see [`ComponentInfo::capabilities`]).
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// The same component with one more capability.
    pub fn with_capability(mut self, capability: &str) -> Self {
        if !self.has(capability) {
            self.capabilities.push(capability.to_string());
        }
        self
    }
}

/// The field names of a serde-derived struct, which its `Deserialize` passes to
/// `deserialize_struct` (empty for anything else).
pub fn struct_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    struct Probe(Option<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field probe")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> serde::Deserializer<'de> for &mut Probe {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut probe = Probe(None);
    let _ = T::deserialize(&mut probe);
    probe.0.unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // only its field list is read
    struct Settings {
        path: String,
        #[serde(default, rename = "top-k")]
        top_k: Option<u32>,
    }

    fn open_settings(config: serde_json::Value) -> Result<(), String> {
        serde_json::from_value::<Settings>(config)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn keys_come_from_the_struct_with_paths_marked() {
        let info = ComponentInfo::new("t", "").with_config_of::<Settings>(&["path"]);
        assert_eq!(
            info.config_keys,
            vec![ConfigKey::path("path"), ConfigKey::new("top-k")]
        );
        assert!(struct_fields::<u32>().is_empty());
    }

    #[test]
    fn a_length_override_marks_the_declared_key_only() {
        let info = ComponentInfo::new("t", "")
            .with_config_of::<Settings>(&["path"])
            .with_length_override("top-k");
        let marked: Vec<&str> = info
            .config_keys
            .iter()
            .filter(|k| k.replaces_lengths)
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(marked, ["top-k"]);
        assert_eq!(info.config_keys.len(), 2, "no key added: {info:?}");
        // Absent from the JSON when unset, so older hosts and plugins read the same bytes.
        let json = serde_json::to_value(&info.config_keys).unwrap();
        assert_eq!(
            json,
            serde_json::json!([{"name": "path", "path": true}, {"name": "top-k", "replaces_lengths": true}])
        );
    }

    #[test]
    fn the_check_passes_a_true_declaration_and_fails_a_wrong_one() {
        let info = ComponentInfo::new("t", "").with_config_of::<Settings>(&["path"]);
        assert_eq!(info.check_config_keys(open_settings), Ok(()));
        // A key the struct does not take is refused by the plugin, so the check fails.
        let wrong = ComponentInfo::new("t", "").with_config_of::<Settings>(&["file"]);
        let err = wrong.check_config_keys(open_settings).unwrap_err();
        assert!(err.contains("`file`"), "{err}");
        // A component that takes any key fails the undeclared-key half.
        let err = info.check_config_keys(|_| Ok(())).unwrap_err();
        assert!(err.contains("accepted the undeclared key"), "{err}");
    }
}
