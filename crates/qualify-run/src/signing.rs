//! Signing for `qualify run --sign KEY`: the key is loaded before anything runs (a bad key never
//! wastes a run), and the receipt text becomes a DSSE envelope around the in-toto Statement.

use std::path::Path;

use qualify_trust::{Envelope, IN_TOTO_PAYLOAD_TYPE, PrivateKey};

use crate::error::Error;

/// Read the `--sign` key, if any; the error names the file and the fix.
pub fn load_key(path: Option<&Path>) -> Result<Option<PrivateKey>, Error> {
    let Some(path) = path else {
        return Ok(None);
    };
    qualify_trust::keys::read_private_key(path)
        .map(Some)
        .map_err(|e| {
            Error::input(
                format!("--sign: {e}"),
                "create a key pair with `qualify keygen --out PREFIX`",
            )
        })
}

/// The receipt text as written: the Statement itself, or with a key a DSSE envelope around it.
pub fn seal(statement_text: String, key: Option<&PrivateKey>, quiet: bool) -> String {
    let Some(key) = key else {
        return statement_text;
    };
    if !quiet {
        eprintln!(
            "signing the receipt ({}, key id {})",
            key.algorithm(),
            key.public_key().keyid()
        );
    }
    Envelope::sign(IN_TOTO_PAYLOAD_TYPE, statement_text.as_bytes(), key).to_json()
}
