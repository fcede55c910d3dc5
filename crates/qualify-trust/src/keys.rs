//! Signing keys: generation, PEM storage and loading, signing and verifying raw messages.
//!
//! Formats (readable by openssl, cosign-style verifiers and most PKI tooling):
//! - private key: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), written with mode 0600;
//! - public key: SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`);
//! - signatures: Ed25519 raw 64 bytes; ECDSA P-256 over SHA-256, ASN.1 DER (as cosign writes);
//! - key id: lowercase hex sha256 of the public key's SPKI DER bytes.
//!
//! Ed25519 verification is strict (`verify_strict`: no small-order keys, canonical `S`). ECDSA
//! signatures are malleable: with `(r, s)` valid so is `(r, n − s)`, a second spelling of the same
//! signature. P-256 signatures are therefore made low-S (`s ≤ n/2`, as BIP 62 and most
//! verifiers of cosign signatures require) and a high-S one is refused, like a non-canonical DER
//! encoding: a signed receipt has exactly one valid spelling per signing.

use std::fmt;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use p256::ecdsa::signature::{Signer, Verifier};
use qualify_model::ParseError;
use rand_core::OsRng;

use crate::sha256_hex;

/// Which signature scheme a key uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    #[default]
    Ed25519,
    /// ECDSA on NIST P-256 with SHA-256.
    P256,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Ed25519 => "ed25519",
            Algorithm::P256 => "p256",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.to_ascii_lowercase().as_str() {
            "ed25519" => Ok(Algorithm::Ed25519),
            "p256" | "p-256" | "ecdsa-p256" => Ok(Algorithm::P256),
            _ => Err(ParseError::new("algorithm", s, ["ed25519", "p256"])),
        }
    }
}

/// What went wrong with a key file.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read key {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write key {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} already exists; keygen never overwrites a key: choose another --out prefix or remove the old pair"
    )]
    Exists { path: PathBuf },
    #[error(
        "{path} is not a {what} this version of qualify reads: expected {expected} (Ed25519 or ECDSA P-256), as `qualify keygen` writes"
    )]
    Format {
        path: PathBuf,
        what: &'static str,
        expected: &'static str,
    },
    #[error("cannot encode the key: {0}")]
    Encode(String),
}

/// A private (signing) key.
pub enum PrivateKey {
    Ed25519(Box<ed25519_dalek::SigningKey>),
    P256(Box<p256::ecdsa::SigningKey>),
}

/// A public (verifying) key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    P256(p256::ecdsa::VerifyingKey),
}

impl PrivateKey {
    /// A fresh key from the operating system's random source.
    pub fn generate(algorithm: Algorithm) -> PrivateKey {
        match algorithm {
            Algorithm::Ed25519 => {
                PrivateKey::Ed25519(Box::new(ed25519_dalek::SigningKey::generate(&mut OsRng)))
            }
            Algorithm::P256 => {
                PrivateKey::P256(Box::new(p256::ecdsa::SigningKey::random(&mut OsRng)))
            }
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            PrivateKey::Ed25519(_) => Algorithm::Ed25519,
            PrivateKey::P256(_) => Algorithm::P256,
        }
    }

    pub fn public_key(&self) -> PublicKey {
        match self {
            PrivateKey::Ed25519(k) => PublicKey::Ed25519(k.verifying_key()),
            PrivateKey::P256(k) => PublicKey::P256(*k.verifying_key()),
        }
    }

    /// PKCS#8 PEM text.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        let pem = match self {
            PrivateKey::Ed25519(k) => k.to_pkcs8_pem(LineEnding::LF),
            PrivateKey::P256(k) => k.to_pkcs8_pem(LineEnding::LF),
        }
        .map_err(|e| KeyError::Encode(e.to_string()))?;
        Ok(pem.to_string())
    }

    /// Parse PKCS#8 PEM text (either algorithm). `None` when it is neither.
    pub fn from_pem(text: &str) -> Option<PrivateKey> {
        if let Ok(k) = ed25519_dalek::SigningKey::from_pkcs8_pem(text) {
            return Some(PrivateKey::Ed25519(Box::new(k)));
        }
        p256::ecdsa::SigningKey::from_pkcs8_pem(text)
            .ok()
            .map(|k| PrivateKey::P256(Box::new(k)))
    }

    /// Sign `message` (Ed25519: 64 raw bytes; P-256: SHA-256 + ECDSA, DER).
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self {
            PrivateKey::Ed25519(k) => k.sign(message).to_bytes().to_vec(),
            PrivateKey::P256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(message);
                let low = sig.normalize_s().unwrap_or(sig);
                low.to_der().as_bytes().to_vec()
            }
        }
    }
}

impl PublicKey {
    pub fn algorithm(&self) -> Algorithm {
        match self {
            PublicKey::Ed25519(_) => Algorithm::Ed25519,
            PublicKey::P256(_) => Algorithm::P256,
        }
    }

    /// SubjectPublicKeyInfo DER bytes.
    pub fn spki_der(&self) -> Result<Vec<u8>, KeyError> {
        let doc = match self {
            PublicKey::Ed25519(k) => k.to_public_key_der(),
            PublicKey::P256(k) => k.to_public_key_der(),
        }
        .map_err(|e| KeyError::Encode(e.to_string()))?;
        Ok(doc.as_bytes().to_vec())
    }

    /// SPKI PEM text.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        match self {
            PublicKey::Ed25519(k) => k.to_public_key_pem(LineEnding::LF),
            PublicKey::P256(k) => k.to_public_key_pem(LineEnding::LF),
        }
        .map_err(|e| KeyError::Encode(e.to_string()))
    }

    /// Parse SPKI PEM text (either algorithm). `None` when it is neither.
    pub fn from_pem(text: &str) -> Option<PublicKey> {
        if let Ok(k) = ed25519_dalek::VerifyingKey::from_public_key_pem(text) {
            return Some(PublicKey::Ed25519(k));
        }
        p256::ecdsa::VerifyingKey::from_public_key_pem(text)
            .ok()
            .map(PublicKey::P256)
    }

    /// The key id: lowercase hex sha256 of the SPKI DER bytes.
    pub fn keyid(&self) -> String {
        // Encoding a valid in-memory key cannot fail; an empty id would never match a signature.
        self.spki_der()
            .map(|der| sha256_hex(&der))
            .unwrap_or_default()
    }

    /// Whether `signature` is this key's signature of `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match self {
            PublicKey::Ed25519(k) => {
                let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
                    return false;
                };
                let sig = ed25519_dalek::Signature::from_bytes(&bytes);
                k.verify_strict(message, &sig).is_ok()
            }
            PublicKey::P256(k) => match p256::ecdsa::Signature::from_der(signature) {
                Ok(sig) => {
                    // Re-encoding must give the same bytes (no alternative DER forms) and `s`
                    // must be low (no `n − s` twin): one spelling per signature.
                    sig.to_der().as_bytes() == signature
                        && sig.normalize_s().is_none()
                        && k.verify(message, &sig).is_ok()
                }
                Err(_) => false,
            },
        }
    }
}

/// The public key's path for a private key written at `prefix`: `PREFIX.pub`.
pub fn public_path(prefix: &Path) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// Generate a key pair and write `prefix` (private, mode 0600, never overwritten) and
/// `prefix.pub`. Returns the public key.
pub fn write_key_pair(prefix: &Path, algorithm: Algorithm) -> Result<PublicKey, KeyError> {
    let pub_path = public_path(prefix);
    for p in [prefix, pub_path.as_path()] {
        if p.exists() {
            return Err(KeyError::Exists {
                path: p.to_path_buf(),
            });
        }
    }
    let key = PrivateKey::generate(algorithm);
    let public = key.public_key();
    let private_pem = key.to_pem()?;
    let public_pem = public.to_pem()?;
    let write = |path: &Path, text: &str, mode: u32| -> Result<(), KeyError> {
        let err = |source| KeyError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .map_err(err)?;
        file.write_all(text.as_bytes()).map_err(err)?;
        file.sync_all().map_err(err)
    };
    write(prefix, &private_pem, 0o600)?;
    write(&pub_path, &public_pem, 0o644)?;
    Ok(public)
}

/// Read a private key file written by [`write_key_pair`] (or any PKCS#8 PEM of either algorithm).
pub fn read_private_key(path: &Path) -> Result<PrivateKey, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    PrivateKey::from_pem(&text).ok_or_else(|| KeyError::Format {
        path: path.to_path_buf(),
        what: "private key",
        expected: "a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`)",
    })
}

/// Read a public key file (SPKI PEM of either algorithm).
pub fn read_public_key(path: &Path) -> Result<PublicKey, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    PublicKey::from_pem(&text).ok_or_else(|| KeyError::Format {
        path: path.to_path_buf(),
        what: "public key",
        expected: "an SPKI PEM public key (`-----BEGIN PUBLIC KEY-----`, the PREFIX.pub file)",
    })
}
