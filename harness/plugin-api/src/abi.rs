//! The FFI layer: the exported descriptor static, the `abi_stable` root module, the glue a plugin
//! exports, and the host-side loader. This is the only module in the project that uses
//! `abi_stable`, `libloading` or `unsafe`; replacing `abi_stable` means replacing this file.

use crate::protocol::{ComponentKind, PluginDescriptor};
use crate::{ApiVersion, PluginImpl, API_VERSION};
use abi_stable::library::{LibHeader, RootModule, RootModuleResult};
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec};
use abi_stable::StableAbi;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

// ---------------------------------------------------------------------------------------------
// The descriptor static, read before any plugin code is called.

/// Name of the exported descriptor static. The layout version is part of the name, so a
/// symbol found under this name has exactly the layout of [`RawDescriptor`].
pub const DESCRIPTOR_SYMBOL: &[u8] = b"DLM_BENCH_PLUGIN_DESCRIPTOR_V1\0";

/// Magic bytes at the start of every descriptor.
pub const MAGIC: [u8; 8] = *b"DLMBENCH";

/// Bit flag for [`RawDescriptor::kinds`]: the plugin provides at least one task.
pub const KIND_TASK: u32 = 1;
/// Bit flag for [`RawDescriptor::kinds`]: the plugin provides at least one model.
pub const KIND_MODEL: u32 = 2;

/// Plain data exported as a static by every plugin. Only fixed-size fields: reading it runs no
/// plugin code and needs no allocator agreement.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawDescriptor {
    /// Always [`MAGIC`]; anything else means the symbol is not a dlm-bench descriptor.
    pub magic: [u8; 8],
    /// Major number of the plugin API the plugin was built against ([`ApiVersion::major`]).
    pub api_major: u32,
    /// Minor number of the plugin API the plugin was built against ([`ApiVersion::minor`]).
    pub api_minor: u32,
    /// Plugin name, NUL-padded UTF-8.
    pub name: [u8; 64],
    /// Plugin version, NUL-padded UTF-8.
    pub version: [u8; 32],
    /// `KIND_TASK | KIND_MODEL` bits.
    pub kinds: u32,
}

impl RawDescriptor {
    /// Build a descriptor at compile time; names longer than the fields are cut.
    pub const fn new(name: &str, version: &str, kinds: u32, api: ApiVersion) -> RawDescriptor {
        RawDescriptor {
            magic: MAGIC,
            api_major: api.major,
            api_minor: api.minor,
            name: fixed(name),
            version: fixed(version),
            kinds,
        }
    }

    /// The plugin name, up to the first NUL (invalid UTF-8 is replaced, never an error).
    pub fn name(&self) -> String {
        unfixed(&self.name)
    }

    /// The plugin version, up to the first NUL (invalid UTF-8 is replaced, never an error).
    pub fn version(&self) -> String {
        unfixed(&self.version)
    }

    /// The plugin API version the plugin was built against.
    pub fn api_version(&self) -> ApiVersion {
        ApiVersion {
            major: self.api_major,
            minor: self.api_minor,
        }
    }
}

const fn fixed<const N: usize>(s: &str) -> [u8; N] {
    let bytes = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < bytes.len() && i < N {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

fn unfixed(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

// ---------------------------------------------------------------------------------------------
// The abi_stable root module.

/// Reply of `call`: JSON text plus a token buffer.
#[repr(C)]
#[derive(StableAbi)]
pub struct CallReply {
    /// The method's JSON reply (one of the reply types in [`crate::protocol`]).
    pub json: RString,
    /// Token ids that travel beside the JSON, concatenated; the JSON says how to split them
    /// (e.g. [`crate::protocol::GenerateReply::lengths`]). Empty when the method returns none.
    pub tokens: RVec<u32>,
}

/// The root module every plugin exports. New functions may only be appended after
/// `close` (prefix-type rule), with a minor API bump.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModuleRef)))]
#[sabi(missing_field(panic))]
pub struct PluginModule {
    /// JSON [`PluginDescriptor`].
    pub describe: extern "C" fn() -> RResult<RString, RString>,
    /// Open a component (`kind`: 0 task, 1 model) from JSON config; returns a handle.
    pub open: extern "C" fn(kind: u8, name: RStr<'_>, config: RStr<'_>) -> RResult<u64, RString>,
    /// Call a method of an open component.
    pub call: extern "C" fn(
        handle: u64,
        method: RStr<'_>,
        request: RStr<'_>,
        tokens: RSlice<'_, u32>,
    ) -> RResult<CallReply, RString>,
    /// Release a component.
    #[sabi(last_prefix_field)]
    pub close: extern "C" fn(handle: u64) -> RResult<(), RString>,
}

impl RootModule for PluginModuleRef {
    abi_stable::declare_root_module_statics! {PluginModuleRef}
    const BASE_NAME: &'static str = "dlm_plugin";
    const NAME: &'static str = "dlm_plugin";
    const VERSION_STRINGS: VersionStrings = abi_stable::package_version_strings!();
}

// ---------------------------------------------------------------------------------------------
// Plugin side: what `export_plugin_abi!` expands to calls these.

/// An open task or model inside a plugin.
pub trait PluginInstance: Send {
    /// Answer one method (a name from [`crate::protocol::method`]) given its JSON request and
    /// the token buffer that travels beside it; return the JSON reply and its token buffer, or
    /// an error message for the user. An unknown method name must be an error, not a panic.
    fn call(
        &mut self,
        method: &str,
        request_json: &str,
        tokens: &[u32],
    ) -> Result<(String, Vec<u32>), String>;
}

/// Open instances of this plugin. Each plugin links its own copy of this crate, so each has
/// its own table.
static INSTANCES: Mutex<BTreeMap<u64, Box<dyn PluginInstance>>> = Mutex::new(BTreeMap::new());
static NEXT_HANDLE: Mutex<u64> = Mutex::new(1);

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Run `f`, turning a panic into an error: a panic must never unwind across `extern "C"`.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> RResult<T, RString> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => RResult::ROk(v),
        Ok(Err(e)) => RResult::RErr(RString::from(e)),
        Err(payload) => RResult::RErr(RString::from(format!(
            "plugin panicked in {what}: {}",
            panic_message(payload)
        ))),
    }
}

#[doc(hidden)]
pub fn glue_describe<P: PluginImpl>() -> RResult<RString, RString> {
    guarded("describe", || {
        serde_json::to_string(&P::descriptor())
            .map(RString::from)
            .map_err(|e| format!("descriptor is not serialisable: {e}"))
    })
}

#[doc(hidden)]
pub fn glue_open<P: PluginImpl>(
    kind: u8,
    name: RStr<'_>,
    config: RStr<'_>,
) -> RResult<u64, RString> {
    guarded("open", || {
        let kind = match kind {
            0 => ComponentKind::Task,
            1 => ComponentKind::Model,
            k => return Err(format!("unknown component kind code {k}")),
        };
        let instance = P::open(kind, name.as_str(), config.as_str())?;
        let handle = {
            let mut next = NEXT_HANDLE.lock().map_err(|e| e.to_string())?;
            let h = *next;
            *next += 1;
            h
        };
        INSTANCES
            .lock()
            .map_err(|e| e.to_string())?
            .insert(handle, instance);
        Ok(handle)
    })
}

#[doc(hidden)]
pub fn glue_call(
    handle: u64,
    method: RStr<'_>,
    request: RStr<'_>,
    tokens: RSlice<'_, u32>,
) -> RResult<CallReply, RString> {
    guarded(method.as_str(), || {
        // Take the instance out so a panic inside it cannot poison the table; it is put back
        // only if the call returns.
        let mut instance = INSTANCES
            .lock()
            .map_err(|e| e.to_string())?
            .remove(&handle)
            .ok_or_else(|| {
                format!("no open instance with handle {handle} (closed, or lost after a panic)")
            })?;
        let result = instance.call(method.as_str(), request.as_str(), tokens.as_slice());
        INSTANCES
            .lock()
            .map_err(|e| e.to_string())?
            .insert(handle, instance);
        let (json, tokens) = result?;
        Ok(CallReply {
            json: RString::from(json),
            tokens: RVec::from(tokens),
        })
    })
}

#[doc(hidden)]
pub fn glue_close(handle: u64) -> RResult<(), RString> {
    guarded("close", || {
        INSTANCES.lock().map_err(|e| e.to_string())?.remove(&handle);
        Ok(())
    })
}

#[doc(hidden)]
pub fn glue_module(
    describe: extern "C" fn() -> RResult<RString, RString>,
    open: extern "C" fn(u8, RStr<'_>, RStr<'_>) -> RResult<u64, RString>,
) -> PluginModuleRef {
    use abi_stable::prefix_type::PrefixTypeTrait;
    extern "C" fn call(
        handle: u64,
        method: RStr<'_>,
        request: RStr<'_>,
        tokens: RSlice<'_, u32>,
    ) -> RResult<CallReply, RString> {
        glue_call(handle, method, request, tokens)
    }
    extern "C" fn close(handle: u64) -> RResult<(), RString> {
        glue_close(handle)
    }
    PluginModule {
        describe,
        open,
        call,
        close,
    }
    .leak_into_prefix()
}

#[doc(hidden)]
pub fn glue_root_loader(module: fn() -> PluginModuleRef) -> RootModuleResult {
    abi_stable::library::__call_root_module_loader(module)
}

/// The `LibHeader` static abi_stable's loader looks for.
#[doc(hidden)]
pub const fn glue_lib_header(constructor: extern "C" fn() -> RootModuleResult) -> LibHeader {
    // SAFETY: `from_constructor::<M>` requires that the constructor returns a module of type
    // `M`. The only constructors passed here are generated by `export_plugin_abi!`, which wraps
    // `glue_root_loader` over a `fn() -> PluginModuleRef`, and `M` is `PluginModuleRef`.
    unsafe {
        LibHeader::from_constructor::<PluginModuleRef>(
            constructor,
            abi_stable::library::CheckTypeLayout::Yes,
        )
    }
}

/// Export a plugin: the descriptor static and the abi_stable root module. `$plugin` implements
/// [`PluginImpl`]; `$kinds` is `KIND_TASK | KIND_MODEL` bits. Plugin authors use
/// `dlm_sdk::export_plugin!`, which calls this.
#[macro_export]
macro_rules! export_plugin_abi {
    ($plugin:ty, name = $name:expr, version = $version:expr, kinds = $kinds:expr) => {
        $crate::export_plugin_abi!(
            $plugin,
            name = $name,
            version = $version,
            kinds = $kinds,
            api = $crate::API_VERSION
        );
    };
    ($plugin:ty, name = $name:expr, version = $version:expr, kinds = $kinds:expr, api = $api:expr) => {
        #[no_mangle]
        pub static DLM_BENCH_PLUGIN_DESCRIPTOR_V1: $crate::abi::RawDescriptor =
            $crate::abi::RawDescriptor::new($name, $version, $kinds, $api);

        extern "C" fn __dlm_describe() -> $crate::abi::__private::RResult<
            $crate::abi::__private::RString,
            $crate::abi::__private::RString,
        > {
            $crate::abi::glue_describe::<$plugin>()
        }
        extern "C" fn __dlm_open(
            kind: u8,
            name: $crate::abi::__private::RStr<'_>,
            config: $crate::abi::__private::RStr<'_>,
        ) -> $crate::abi::__private::RResult<u64, $crate::abi::__private::RString> {
            $crate::abi::glue_open::<$plugin>(kind, name, config)
        }
        fn __dlm_module() -> $crate::abi::PluginModuleRef {
            $crate::abi::glue_module(__dlm_describe, __dlm_open)
        }
        extern "C" fn __dlm_root_constructor() -> $crate::abi::__private::RootModuleResult {
            $crate::abi::glue_root_loader(__dlm_module)
        }
        /// abi_stable's root-module header (its name is abi_stable's mangled
        /// `ROOT_MODULE_LOADER_NAME`; a test in dlm-plugin-api checks it).
        #[no_mangle]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::abi::__private::LibHeader =
            $crate::abi::glue_lib_header(__dlm_root_constructor);
    };
}

#[doc(hidden)]
pub mod __private {
    pub use abi_stable::library::{LibHeader, RootModuleResult};
    pub use abi_stable::std_types::{RResult, RStr, RString};
}

/// The exported header static name the macro hard-codes, for the test below.
#[doc(hidden)]
pub const EXPORTED_HEADER_NAME: &str = "_1as_0lib_1header_0root_bmodule_bloader";

// ---------------------------------------------------------------------------------------------
// Host side: loading.

/// Why a plugin library could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The dynamic loader could not open the file (missing, not a library, unresolved symbols).
    #[error("cannot open plugin library {path}: {reason}")]
    Open {
        /// The library path as given.
        path: PathBuf,
        /// The dynamic loader's message.
        reason: String,
    },
    /// The library exports no descriptor static: it was not built with `export_plugin!`.
    #[error("{path} is not a dlm-bench plugin: it exports no `DLM_BENCH_PLUGIN_DESCRIPTOR_V1` (build it with dlm_sdk::export_plugin!)")]
    NoDescriptor {
        /// The library path as given.
        path: PathBuf,
    },
    /// The descriptor static does not start with [`MAGIC`].
    #[error("{path} has a corrupt dlm-bench descriptor (bad magic bytes); rebuild the plugin")]
    BadMagic {
        /// The library path as given.
        path: PathBuf,
    },
    /// The plugin was built against a plugin API this host does not accept
    /// ([`ApiVersion::accepts`]); detected from the descriptor alone, no plugin code ran.
    #[error("plugin `{name}` {version} at {path} was built against plugin API {plugin_api}, but this dlm-bench speaks plugin API {host_api}; rebuild the plugin against dlm-plugin-api {host_api}")]
    ApiMismatch {
        /// The library path as given.
        path: PathBuf,
        /// Plugin name from the descriptor.
        name: String,
        /// Plugin version from the descriptor.
        version: String,
        /// The API version the plugin was built against.
        plugin_api: ApiVersion,
        /// The API version of this host ([`API_VERSION`]).
        host_api: ApiVersion,
    },
    /// abi_stable's type-layout check of the root module failed (the plugin linked an
    /// incompatible `dlm-plugin-api` despite a matching version number).
    #[error("plugin `{name}` at {path} failed the ABI layout check: {reason}")]
    Abi {
        /// The library path as given.
        path: PathBuf,
        /// Plugin name from the descriptor.
        name: String,
        /// abi_stable's message.
        reason: String,
    },
    /// `describe` failed, returned invalid JSON, or named a plugin other than its descriptor.
    #[error("plugin `{name}` at {path}: {reason}")]
    Describe {
        /// The library path as given.
        path: PathBuf,
        /// Plugin name from the descriptor.
        name: String,
        /// What went wrong.
        reason: String,
    },
}

/// A plugin call that failed (the plugin returned an error or panicked).
#[derive(Debug, thiserror::Error)]
#[error("plugin `{plugin}`: {method}: {message}")]
pub struct CallError {
    /// Name of the plugin that was called.
    pub plugin: String,
    /// The method (e.g. `model.generate`, or `open model `mdm`` for an `open`).
    pub method: String,
    /// The plugin's error message (without its kind tag), or the panic message after
    /// `plugin panicked in …`.
    pub message: String,
    /// What kind of failure the plugin reported ([`crate::ErrorKind::Internal`] for a panic
    /// or an untagged message).
    pub kind: crate::ErrorKind,
}

impl CallError {
    /// A failed call's error from the string that crossed the boundary (kind tag decoded).
    fn from_wire(plugin: &str, method: String, wire: &str) -> CallError {
        let (kind, message) = crate::decode_error(wire);
        CallError {
            plugin: plugin.to_string(),
            method,
            message: message.to_string(),
            kind,
        }
    }
}

/// A loaded plugin library. The library is never unloaded (unloading Rust cdylibs with
/// thread-local destructors is unsound), so this is `Copy`-cheap to share.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// The library path it was loaded from.
    pub path: PathBuf,
    /// The descriptor static, read before any plugin code ran.
    pub raw: RawDescriptor,
    /// What the plugin's `describe` returned; its name equals `raw`'s.
    pub descriptor: PluginDescriptor,
    module: PluginModuleRef,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("path", &self.path)
            .field("descriptor", &self.descriptor)
            .finish()
    }
}

/// Read the descriptor static of a library without calling into it.
pub fn read_descriptor(path: &Path) -> Result<RawDescriptor, LoadError> {
    // SAFETY: opening a library runs its initialisers; that is inherent to loading plugins,
    // and the user chose this path. The library is never closed (see `LoadedPlugin`).
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| LoadError::Open {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    // SAFETY: the symbol name carries the descriptor layout version, so any symbol under this
    // name was produced by `export_plugin_abi!` with exactly the `RawDescriptor` layout. It is a
    // static, so the pointer stays valid while the library stays loaded, which is forever: the
    // `Library` is leaked below.
    let raw = unsafe {
        match lib.get::<*const RawDescriptor>(DESCRIPTOR_SYMBOL) {
            Ok(sym) => Some(**sym),
            Err(_) => None,
        }
    };
    std::mem::forget(lib);
    let raw = raw.ok_or_else(|| LoadError::NoDescriptor {
        path: path.to_owned(),
    })?;
    if raw.magic != MAGIC {
        return Err(LoadError::BadMagic {
            path: path.to_owned(),
        });
    }
    Ok(raw)
}

impl LoadedPlugin {
    /// Load a plugin: read and check its descriptor (no plugin code called), then initialise
    /// its root module with abi_stable's layout check, then ask it to describe itself.
    pub fn load(path: &Path) -> Result<LoadedPlugin, LoadError> {
        let raw = read_descriptor(path)?;
        if !API_VERSION.accepts(raw.api_version()) {
            return Err(LoadError::ApiMismatch {
                path: path.to_owned(),
                name: raw.name(),
                version: raw.version(),
                plugin_api: raw.api_version(),
                host_api: API_VERSION,
            });
        }
        let abi_err = |e: abi_stable::library::LibraryError| LoadError::Abi {
            path: path.to_owned(),
            name: raw.name(),
            reason: e.to_string(),
        };
        let header = abi_stable::library::lib_header_from_path(path).map_err(abi_err)?;
        let module = header
            .init_root_module::<PluginModuleRef>()
            .map_err(abi_err)?;
        let describe_err = |reason: String| LoadError::Describe {
            path: path.to_owned(),
            name: raw.name(),
            reason,
        };
        let json = match (module.describe())() {
            RResult::ROk(s) => s.into_string(),
            RResult::RErr(e) => return Err(describe_err(format!("describe failed: {e}"))),
        };
        let descriptor: PluginDescriptor = serde_json::from_str(&json)
            .map_err(|e| describe_err(format!("describe returned invalid JSON: {e}")))?;
        if descriptor.name != raw.name() {
            return Err(describe_err(format!(
                "descriptor names the plugin `{}` but its static descriptor says `{}`",
                descriptor.name,
                raw.name()
            )));
        }
        Ok(LoadedPlugin {
            path: path.to_owned(),
            raw,
            descriptor,
            module,
        })
    }

    /// The plugin's name (from its descriptor).
    pub fn name(&self) -> &str {
        &self.descriptor.name
    }

    /// Open a component. The instance is closed when the returned value is dropped.
    pub fn open(
        &self,
        kind: ComponentKind,
        name: &str,
        config_json: &str,
    ) -> Result<Instance, CallError> {
        let code = match kind {
            ComponentKind::Task => 0,
            ComponentKind::Model => 1,
        };
        match (self.module.open())(code, RStr::from(name), RStr::from(config_json)) {
            RResult::ROk(handle) => Ok(Instance {
                plugin: self.descriptor.name.clone(),
                module: self.module,
                handle,
            }),
            RResult::RErr(e) => Err(CallError::from_wire(
                &self.descriptor.name,
                format!("open {} `{name}`", kind.as_str()),
                &e,
            )),
        }
    }
}

/// An open component of a loaded plugin.
pub struct Instance {
    plugin: String,
    module: PluginModuleRef,
    handle: u64,
}

impl Instance {
    /// Call a method with a JSON request and a token buffer.
    pub fn call(
        &self,
        method: &str,
        request_json: &str,
        tokens: &[u32],
    ) -> Result<(String, Vec<u32>), CallError> {
        match (self.module.call())(
            self.handle,
            RStr::from(method),
            RStr::from(request_json),
            RSlice::from_slice(tokens),
        ) {
            RResult::ROk(reply) => Ok((reply.json.into_string(), reply.tokens.into_vec())),
            RResult::RErr(e) => Err(CallError::from_wire(&self.plugin, method.to_string(), &e)),
        }
    }

    /// Name of the plugin this instance belongs to.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = (self.module.close())(self.handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_header_name_matches_abi_stable() {
        assert_eq!(
            EXPORTED_HEADER_NAME,
            abi_stable::library::ROOT_MODULE_LOADER_NAME
        );
    }

    #[test]
    fn fixed_width_names_round_trip_and_truncate() {
        let d = RawDescriptor::new("dlm-formal", "0.1.0", KIND_TASK | KIND_MODEL, API_VERSION);
        assert_eq!(d.name(), "dlm-formal");
        assert_eq!(d.version(), "0.1.0");
        let long = "x".repeat(100);
        let d = RawDescriptor::new(&long, "1", 0, API_VERSION);
        assert_eq!(d.name().len(), 64);
    }

    #[test]
    fn api_version_rule() {
        let host = ApiVersion { major: 1, minor: 2 };
        assert!(host.accepts(ApiVersion { major: 1, minor: 0 }));
        assert!(host.accepts(ApiVersion { major: 1, minor: 2 }));
        assert!(!host.accepts(ApiVersion { major: 1, minor: 3 }));
        assert!(!host.accepts(ApiVersion { major: 2, minor: 0 }));
        assert!(!host.accepts(ApiVersion { major: 0, minor: 2 }));
    }
}
