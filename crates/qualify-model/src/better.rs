//! The direction of a metric: whether a smaller or a larger value is better (`lower` for times
//! and memory, `higher` for throughput). Declared in the spec, used by the analysis.

use serde::{Deserialize, Serialize};

/// Whether a smaller or a larger value of a metric is better. Serialized `lower` / `higher`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}
