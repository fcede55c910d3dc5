//! [`SeqSet`]: the vocabulary's compact set of request sequence numbers (`qualify_model::load`),
//! re-exported where the engine records writes.

pub use qualify_model::load::SeqSet;
