//! Claim levels: the three strengths of statement a user can make about an artifact, ordered
//! weakest first. Defined once in `qualify-model`.

pub use qualify_model::ClaimLevel;
