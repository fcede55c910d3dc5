//! Builds the preloaded shim (`shim/perturb.c`) with the system C compiler into `OUT_DIR`; the
//! crate embeds the bytes (`include_bytes!`), so the shim ships inside the qualify binary.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = PathBuf::from("shim/perturb.c");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-env-changed=CC");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let so = out.join("libqualify_perturb.so");
    let status = Command::new(&cc)
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-g0",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fvisibility=hidden",
            "-pthread",
            "-Wl,--build-id=none",
            "-o",
        ])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run the C compiler `{cc}` for {}: {e} (install gcc or set CC)",
                src.display()
            )
        });
    assert!(status.success(), "`{cc}` failed to build {}", src.display());
}
