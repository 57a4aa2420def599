//! The dlm-bench plugin ABI.
//!
//! A plugin is a `cdylib` that exports two things:
//!
//! 1. a plain `#[repr(C)]` static, [`RawDescriptor`](abi::RawDescriptor), that the host reads
//!    **before calling any plugin code**: magic bytes, descriptor layout, plugin-API version,
//!    plugin name and version, and which kinds of component (task, model) it provides;
//! 2. an `abi_stable` root module ([`abi::PluginModuleRef`]) with four coarse functions —
//!    `describe`, `open`, `call`, `close` — that carry only plain data: JSON text and token ids.
//!
//! Everything `abi_stable`/`libloading`-specific lives in [`abi`], so the crate can be swapped
//! for another FFI layer without touching plugins or the harness. The typed protocol both sides
//! speak over JSON is in [`protocol`]; plugin authors normally use the `dlm-sdk` crate, which
//! implements [`PluginImpl`] for them.

// The public API its readers use: every item documented. A crate-root attribute rather than the
// workspace's `[lints]`, which apply to every target of a package (criterion's generated bench
// functions have no docs) while this applies to the library alone.
#![warn(missing_docs)]
// `unsafe` is denied everywhere in this crate but `abi` (the plugin loader, each block with its
// safety argument); `deny` rather than the workspace's `forbid` so that one module can lift it.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod abi;
pub mod completion;
pub mod hash;
pub mod protocol;

pub use abi::{CallError, LoadError, LoadedPlugin, PluginInstance};
pub use protocol::*;

/// Version of the plugin API this crate defines. A host accepts a plugin whose API version has
/// the same major number and a minor number no greater than its own (a newer host may add
/// optional methods; an older host cannot know about them).
pub const API_VERSION: ApiVersion = ApiVersion { major: 1, minor: 8 };

/// `major.minor` version of the plugin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiVersion {
    /// Incremented for breaking changes; host and plugin must agree on it exactly.
    pub major: u32,
    /// Incremented for compatible additions (a new optional method or field); a host accepts
    /// plugins whose minor version is no greater than its own.
    pub minor: u32,
}

impl ApiVersion {
    /// Whether a host speaking `self` can load a plugin built against `plugin`.
    pub fn accepts(self, plugin: ApiVersion) -> bool {
        self.major == plugin.major && plugin.minor <= self.minor
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What a plugin implements; `dlm-sdk` provides the usual implementation. All methods run
/// inside `catch_unwind` in the exported glue, so a panic becomes an error string.
pub trait PluginImpl: 'static {
    /// The full descriptor (components and capabilities), returned by `describe`.
    fn descriptor() -> PluginDescriptor;
    /// Create a task or model instance from its JSON configuration.
    fn open(
        kind: ComponentKind,
        name: &str,
        config_json: &str,
    ) -> Result<Box<dyn PluginInstance>, String>;
}
