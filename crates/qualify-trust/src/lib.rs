//! `qualify-trust`: what makes a receipt checkable by a third party.
//!
//! - [`keys`]: Ed25519 and ECDSA P-256 key pairs (PKCS#8 PEM private keys written mode 0600,
//!   SPKI PEM public keys) and the key id (`sha256` of the public key's SPKI DER, lowercase hex).
//! - [`dsse`]: the DSSE v1 envelope: pre-authentication encoding, signing, verification that
//!   names the check that failed.
//! - [`fingerprint`]: the environment a run happened in (OS, kernel, CPU, cgroups, tool
//!   versions, git state, lockfile digests, environment variables with secrets redacted).
//! - [`vsa`]: a SLSA Verification Summary Attestation v1 for a claim the gate accepted.
//!
//! Nothing here knows the receipt's predicate; the evidence crate and the binary wire it in.

pub mod dsse;
pub mod fingerprint;
pub mod keys;
pub mod redact;
pub mod vsa;

pub use dsse::{Envelope, EnvelopeSignature, IN_TOTO_PAYLOAD_TYPE, VerifyError, pae};
pub use fingerprint::{Fingerprint, FingerprintInputs};
pub use keys::{Algorithm, KeyError, PrivateKey, PublicKey};

pub use qualify_model::sha256_hex;
