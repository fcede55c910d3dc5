//! The preloaded shim as the binary ships it: its bytes (built from `shim/perturb.c` by
//! `build.rs` and embedded), installed once to a directory only qualify's user can write, under
//! a name carrying its digest, and checked byte for byte before every use — so neither the
//! artifact nor another user can put another library in its place.
//!
//! The directory: as root `/var/cache/qualify/perturb`; otherwise `$XDG_CACHE_HOME` or
//! `~/.cache` + `qualify/perturb` (a home directory the sandbox hides: the caller adds the
//! shim's path to the sandbox's readable paths, which binds it read-only into the cell).

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::PerturbError;

/// The shim's bytes, as built for this binary.
pub const BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libqualify_perturb.so"));

/// The environment variable the shim reads (and nothing else does).
pub const ENV: &str = "QUALIFY_PERTURB";

/// The installed shim.
#[derive(Debug, Clone)]
pub struct Shim {
    path: PathBuf,
    sha256: String,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PerturbError + '_ {
    move |source| PerturbError::ShimIo {
        path: path.to_path_buf(),
        source,
    }
}

/// A directory qualify's user owns and nobody else may write.
fn private_dir(dir: &Path) -> Result<(), PerturbError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let meta = std::fs::metadata(dir).map_err(io(dir))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mode = meta.permissions().mode();
    if meta.uid() != me || mode & 0o022 != 0 {
        return Err(PerturbError::ShimExposed {
            path: dir.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

impl Shim {
    /// Where the shim goes by default (see the module doc).
    pub fn default_dir() -> PathBuf {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            return PathBuf::from("/var/cache/qualify/perturb");
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .map(|h| h.join(".cache"))
            })
            .unwrap_or_else(|| {
                // SAFETY: as above.
                PathBuf::from(format!("/var/tmp/qualify-{}", unsafe { libc::geteuid() }))
            });
        cache.join("qualify").join("perturb")
    }

    /// Install the shim in `dir` (made if missing; refused if others may write it), or find it
    /// there already, checked byte for byte.
    pub fn install(dir: &Path) -> Result<Shim, PerturbError> {
        // Every parent too: a writable parent could rename the directory away.
        for d in dir.ancestors().collect::<Vec<_>>().into_iter().rev() {
            if d.as_os_str().is_empty() || d.exists() {
                continue;
            }
            std::fs::create_dir(d).map_err(io(d))?;
            let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755));
        }
        private_dir(dir)?;
        let sha256 = qualify_model::sha256_hex(BYTES);
        let path = dir.join(format!("qualify-perturb-{}.so", &sha256[..16]));
        let shim = Shim { path, sha256 };
        if shim.verify().is_ok() {
            return Ok(shim);
        }
        let tmp = dir.join(format!(".qualify-perturb.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o444)
            .open(&tmp)
            .map_err(io(&tmp))?;
        f.write_all(BYTES).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        drop(f);
        std::fs::rename(&tmp, &shim.path).map_err(io(&shim.path))?;
        shim.verify()?;
        Ok(shim)
    }

    /// The shim's file is still exactly the bytes qualify ships, owned by qualify's user and
    /// writable by nobody else.
    pub fn verify(&self) -> Result<(), PerturbError> {
        let meta = std::fs::symlink_metadata(&self.path).map_err(io(&self.path))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !meta.is_file() || meta.uid() != me || meta.permissions().mode() & 0o022 != 0 {
            return Err(PerturbError::ShimExposed {
                path: self.path.clone(),
                mode: meta.permissions().mode() & 0o7777,
            });
        }
        let bytes = std::fs::read(&self.path).map_err(io(&self.path))?;
        if bytes != BYTES {
            return Err(PerturbError::ShimChanged {
                path: self.path.clone(),
                found: qualify_model::sha256_hex(&bytes),
                expected: self.sha256.clone(),
            });
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_once_and_refuses_a_replaced_shim() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("cache/qualify/perturb");
        let shim = Shim::install(&d).unwrap();
        assert!(shim.path().is_file());
        assert_eq!(std::fs::read(shim.path()).unwrap(), BYTES);
        // Installing again finds the same file.
        assert_eq!(Shim::install(&d).unwrap().path(), shim.path());
        // Replaced (as its owner could): verify refuses it, install puts the real one back.
        std::fs::remove_file(shim.path()).unwrap();
        std::fs::write(shim.path(), b"not the shim").unwrap();
        std::fs::set_permissions(shim.path(), std::fs::Permissions::from_mode(0o444)).unwrap();
        assert!(matches!(
            shim.verify(),
            Err(PerturbError::ShimChanged { .. })
        ));
        let again = Shim::install(&d).unwrap();
        assert_eq!(std::fs::read(again.path()).unwrap(), BYTES);
    }

    #[test]
    fn refuses_a_directory_others_may_write() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("open");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            Shim::install(&d),
            Err(PerturbError::ShimExposed { .. })
        ));
    }
}
