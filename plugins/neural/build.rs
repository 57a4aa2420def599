//! Only with the `tch` feature (of dlm-neural, and of dlm-hf, whose Cargo.toml names this file as
//! its build script too): find LibTorch the way torch-sys will, and stop with the fix when
//! there is none (torch-sys would otherwise try to download it, which fails offline with an
//! error that names neither the variables nor this repository's install script); then record
//! LibTorch's library folder as the run path of the plugin library, its tests and benches, so
//! they load `libtorch_cpu.so` without `LD_LIBRARY_PATH`.
//!
//! torch-sys's build script usually runs first, though (many crates wait on it, so cargo starts
//! it early): for a build with neither variable set, the repository's .cargo/config.toml points
//! LIBTORCH at tools/tch/no-libtorch, whose build-version makes torch-sys stop with the same fix.
//!
//! No dependency on torch-sys on purpose: a dependency on it (a `links` crate) would make this
//! script wait for torch-sys's, whose failure would then come first.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PyTorch version torch-sys 0.22 (tch 0.22, burn-tch 0.22) is written against.
const TORCH_VERSION: &str = "2.9.0";

const FIX: &str = "\
The `tch` feature (of dlm-neural or dlm-hf) needs LibTorch 2.9.0. Install it (PyPI's
torch==2.9.0 in .venv-tch, about 7 GB) and point the build at it:

    tools/tch/install.sh
    source .venv-tch/bin/activate && export LIBTORCH_USE_PYTORCH=1

or set LIBTORCH to an unpacked LibTorch 2.9.0 (the folder holding lib/ and include/).
See docs/user-guide.md, section \"The tch backend (LibTorch)\".";

fn var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var(name).ok()
}

fn fail(why: &str) -> ! {
    eprintln!("\nerror: {why}\n\n{FIX}\n");
    std::process::exit(1);
}

fn main() {
    // Not `rerun-if-changed=build.rs`: in dlm-hf that path is missing, which would rerun the
    // script at every build. A changed script is rerun anyway; one directive turns off cargo's
    // default of rerunning it whenever any file of the package changes.
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if env::var_os("CARGO_FEATURE_TCH").is_none() {
        return;
    }
    let lib = match libtorch_lib() {
        Ok(lib) => lib,
        Err(why) => fail(&why),
    };
    if !lib.join("libtorch_cpu.so").exists() && !lib.join("libtorch_cpu.dylib").exists() {
        fail(&format!(
            "no libtorch_cpu in {}, the LibTorch library folder the build was pointed at",
            lib.display()
        ));
    }
    // torch-sys links to LibTorch but records no run path (its `-Wl,-rpath` goes to the C++
    // compiler, not the linker), so a library built against a virtual environment would not
    // load outside it.
    if lib != Path::new("/usr/lib") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    }
}

/// LibTorch's library folder, by torch-sys's rules: `LIBTORCH_USE_PYTORCH` asks the Python
/// interpreter (`python` in a virtual environment, `python3` otherwise), then `LIBTORCH`
/// (with `LIBTORCH_LIB`), then a system install in `/usr/lib`.
fn libtorch_lib() -> Result<PathBuf, String> {
    let bypass = var("LIBTORCH_BYPASS_VERSION_CHECK").is_some();
    if var("LIBTORCH_USE_PYTORCH").is_some() {
        let python = if var("VIRTUAL_ENV").is_some() {
            "python"
        } else {
            "python3"
        };
        let script = "import torch\nfrom torch.utils import cpp_extension\n\
                      print(torch.__version__.split('+')[0])\n\
                      print(cpp_extension.library_paths()[0])";
        let out = Command::new(python)
            .args(["-c", script])
            .output()
            .map_err(|e| {
                format!("LIBTORCH_USE_PYTORCH is set but `{python}` could not be run: {e}")
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().last().unwrap_or("").trim();
            return Err(format!(
                "LIBTORCH_USE_PYTORCH is set but `{python}` has no usable PyTorch ({last})"
            ));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut lines = stdout.lines();
        let (version, lib) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
        if version != TORCH_VERSION && !bypass {
            return Err(format!(
                "LIBTORCH_USE_PYTORCH is set but `{python}`'s PyTorch is {version}; tch 0.22 needs \
                 {TORCH_VERSION} (LIBTORCH_BYPASS_VERSION_CHECK=1 tries anyway)"
            ));
        }
        return Ok(PathBuf::from(lib));
    }
    if let Some(root) = var("LIBTORCH") {
        // The repository's .cargo/config.toml sets it to a placeholder when nothing else does.
        if Path::new(&root).join("README").exists() && root.ends_with("no-libtorch") {
            return Err("neither LIBTORCH_USE_PYTORCH nor LIBTORCH is set".into());
        }
        let lib = var("LIBTORCH_LIB").unwrap_or_else(|| root.clone());
        return Ok(Path::new(&lib).join("lib"));
    }
    if Path::new("/usr/lib/libtorch.so").exists() {
        return Ok(PathBuf::from("/usr/lib"));
    }
    Err(
        "neither LIBTORCH_USE_PYTORCH nor LIBTORCH is set, and there is no /usr/lib/libtorch.so"
            .into(),
    )
}
