//! The compute device a model config names (`device: …`), parsed one way for every plugin that
//! runs on Burn. Parsing needs no Burn: a plugin maps the parsed [`DeviceName`] to its Burn
//! device under its own Cargo features, and says which backends it was built with so that a
//! name it cannot serve is refused with the list of those it can.

use crate::{PluginError, Result};

/// A device, as named in a model config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceName {
    /// Burn's pure-Rust CPU backend: `flex` (the default) or `cpu`.
    Flex,
    /// The `wgpu` backend's default adapter: `wgpu`.
    Wgpu,
    /// CUDA GPU `N`: `cuda` (GPU 0) or `cuda:N`.
    Cuda(usize),
    /// LibTorch on the CPU: `tch` or `tch:cpu`.
    LibTorchCpu,
    /// LibTorch on CUDA GPU `N`: `tch:cuda` (GPU 0) or `tch:cuda:N`.
    LibTorchCuda(usize),
}

/// The GPU backends a plugin build has (its Cargo features); flex is always there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backends {
    /// The `wgpu` feature.
    pub wgpu: bool,
    /// The `cuda` feature.
    pub cuda: bool,
    /// The `tch` feature (LibTorch).
    pub libtorch: bool,
}

impl Backends {
    /// The device names a build with these backends accepts, for messages.
    pub fn names(self) -> Vec<&'static str> {
        let mut names = vec!["flex"];
        if self.wgpu {
            names.push("wgpu");
        }
        if self.cuda {
            names.push("cuda[:N]");
        }
        if self.libtorch {
            names.push("tch[:cpu|:cuda[:N]]");
        }
        names
    }
}

impl DeviceName {
    /// Parse a config's `device` (`None`: flex) for `plugin`, built with `built`. A malformed
    /// name, or one of a backend this build lacks, is refused naming what the build accepts.
    pub fn parse(name: Option<&str>, plugin: &str, built: Backends) -> Result<DeviceName> {
        let name = name.unwrap_or("flex");
        let unavailable = || {
            PluginError::bad_config(format!(
                "unknown or unavailable device `{name}`: this build of {plugin} supports {} \
                 (a GPU backend needs the plugin's Cargo feature of its name)",
                built.names().join(", ")
            ))
        };
        let device = match name {
            "flex" | "cpu" => DeviceName::Flex,
            "wgpu" => DeviceName::Wgpu,
            "cuda" => DeviceName::Cuda(0),
            "tch" | "tch:cpu" => DeviceName::LibTorchCpu,
            "tch:cuda" => DeviceName::LibTorchCuda(0),
            s if s.starts_with("tch:") => {
                let index = s.strip_prefix("tch:cuda:").and_then(|n| n.parse().ok());
                DeviceName::LibTorchCuda(index.ok_or_else(|| {
                    PluginError::bad_config(format!(
                        "bad LibTorch device `{s}`: use tch, tch:cpu, tch:cuda or tch:cuda:N"
                    ))
                })?)
            }
            s if s.starts_with("cuda:") => DeviceName::Cuda(s[5..].parse().map_err(|_| {
                PluginError::bad_config(format!("bad CUDA device `{s}`: use cuda or cuda:N"))
            })?),
            _ => return Err(unavailable()),
        };
        let available = match device {
            DeviceName::Flex => true,
            DeviceName::Wgpu => built.wgpu,
            DeviceName::Cuda(_) => built.cuda,
            DeviceName::LibTorchCpu | DeviceName::LibTorchCuda(_) => built.libtorch,
        };
        if available {
            Ok(device)
        } else {
            Err(unavailable())
        }
    }

    /// How timings and results name the device: `cpu` for flex, else the canonical name
    /// (`wgpu`, `cuda:N`, `tch:cpu`, `tch:cuda:N`).
    pub fn label(self) -> String {
        match self {
            DeviceName::Flex => "cpu".into(),
            DeviceName::Wgpu => "wgpu".into(),
            DeviceName::Cuda(i) => format!("cuda:{i}"),
            DeviceName::LibTorchCpu => "tch:cpu".into(),
            DeviceName::LibTorchCuda(i) => format!("tch:cuda:{i}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Backends = Backends {
        wgpu: true,
        cuda: true,
        libtorch: true,
    };

    fn parse(name: &str, built: Backends) -> Result<DeviceName> {
        DeviceName::parse(Some(name), "dlm-test", built)
    }

    #[test]
    fn every_documented_name_parses() {
        assert_eq!(
            DeviceName::parse(None, "p", Backends::default()).unwrap(),
            DeviceName::Flex
        );
        for (name, want) in [
            ("flex", DeviceName::Flex),
            ("cpu", DeviceName::Flex),
            ("wgpu", DeviceName::Wgpu),
            ("cuda", DeviceName::Cuda(0)),
            ("cuda:3", DeviceName::Cuda(3)),
            ("tch", DeviceName::LibTorchCpu),
            ("tch:cpu", DeviceName::LibTorchCpu),
            ("tch:cuda", DeviceName::LibTorchCuda(0)),
            ("tch:cuda:2", DeviceName::LibTorchCuda(2)),
        ] {
            assert_eq!(parse(name, ALL).unwrap(), want, "{name}");
        }
        assert_eq!(parse("cuda", ALL).unwrap().label(), "cuda:0");
        assert_eq!(parse("flex", ALL).unwrap().label(), "cpu");
    }

    #[test]
    fn malformed_names_are_refused_with_the_fix() {
        for bad in ["tch:gpu", "tch:cuda:x", "tch:cuda0"] {
            let e = parse(bad, ALL).unwrap_err().message;
            assert!(e.contains("tch:cuda:N") && e.contains(bad), "{bad}: {e}");
        }
        let e = parse("cuda:x", ALL).unwrap_err().message;
        assert!(e.contains("bad CUDA device `cuda:x`"), "{e}");
    }

    #[test]
    fn a_backend_the_build_lacks_is_refused_naming_those_it_has() {
        let built = Backends {
            wgpu: true,
            ..Backends::default()
        };
        for name in ["cuda", "cuda:1", "tch", "tch:cuda:0", "tpu"] {
            let e = parse(name, built).unwrap_err().message;
            assert!(
                e.contains(&format!("`{name}`")) && e.contains("dlm-test supports flex, wgpu ("),
                "{name}: {e}"
            );
        }
        assert_eq!(parse("wgpu", built).unwrap(), DeviceName::Wgpu);
    }
}
