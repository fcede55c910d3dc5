//! What the ledger indexes from a receipt: artifact name, claim level, supported flag, start and
//! finish, and per cell its parameters, outcome, limits, control and boundary marks, and a stable
//! failure signature (`deadlock@threads=4,rounds=10`), and the development record's summary
//! when the run had a trace. Receipts are read as generic JSON so the
//! ledger keeps working across receipt additions; a DSSE envelope is unwrapped first. JSON is
//! read strictly ([`qualify_model::json`]): a receipt with a key twice in one object is refused.

use serde_json::Value;

/// Why a text is not a receipt the ledger can index: the part that is missing or unreadable.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("the envelope's `payload` is not base64 ({0})")]
    PayloadNotBase64(#[source] base64::DecodeError),
    #[error("the envelope's payload is not JSON ({0})")]
    PayloadNotJson(#[source] serde_json::Error),
    #[error("`predicate` is missing")]
    NoPredicate,
    /// A text field, by its JSON pointer under the predicate (`/claim/level`).
    #[error("`predicate{}` is missing or not a string", .0.replace('/', "."))]
    NoText(&'static str),
    #[error("`predicate.claim.supported` is missing or not a boolean")]
    NoSupported,
    /// The cell at this index has no outcome.
    #[error("`predicate.cells[{0}].result.outcome` is missing")]
    NoOutcome(usize),
}

/// A receipt's indexed fields.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedReceipt {
    pub artifact: String,
    pub claim_level: String,
    pub supported: bool,
    pub incomplete: bool,
    pub started: Option<String>,
    pub finished: Option<String>,
    pub cells: Vec<IndexedCell>,
    /// The development record's summary, when the run had a trace.
    pub development: Option<IndexedDevelopment>,
}

/// What the ledger keeps of a receipt's development record
/// (`predicate.layers.process.evidence`): the trace's formats and counts, and where the failing
/// cells lie relative to what development ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedDevelopment {
    /// `claude-code,codex`.
    pub formats: String,
    pub commands: i64,
    pub artifact_runs: i64,
    pub failing_cells: i64,
    pub outside: i64,
    pub inside: i64,
    pub unknown: i64,
    /// The coverage sentence.
    pub summary: String,
}

impl IndexedDevelopment {
    fn parse(predicate: &Value) -> Option<IndexedDevelopment> {
        let evidence = predicate.pointer("/layers/process/evidence")?;
        let trace = evidence.get("trace").filter(|t| t.is_object())?;
        let coverage = evidence.get("coverage").filter(|c| c.is_object())?;
        let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64).unwrap_or(0);
        let mut formats: Vec<&str> = trace
            .get("sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("format").and_then(Value::as_str))
            .collect();
        formats.sort_unstable();
        formats.dedup();
        Some(IndexedDevelopment {
            formats: formats.join(","),
            commands: n(trace, "commands_total"),
            artifact_runs: trace
                .pointer("/coverage/artifact_runs")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            failing_cells: n(coverage, "failing_cells"),
            outside: n(coverage, "outside"),
            inside: n(coverage, "inside"),
            unknown: n(coverage, "unknown"),
            summary: coverage
                .get("sentence")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
    }
}

/// One cell's indexed fields.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedCell {
    /// The parameters object, in axis order.
    pub params: Value,
    /// `threads=4,rounds=10` (empty for no parameters): identifies the cell across runs.
    pub params_key: String,
    pub outcome: String,
    pub limits: Value,
    pub signature: String,
    pub control: bool,
    pub boundary: bool,
}

impl IndexedCell {
    /// Completed and not ok (an interrupted cell is not a failure of the artifact).
    pub fn failed(&self) -> bool {
        self.outcome != "ok" && self.outcome != "interrupted"
    }
}

/// `outcome@params_key`, e.g. `deadlock@threads=4,rounds=10` (just the outcome without params).
pub fn signature(outcome: &str, params_key: &str) -> String {
    if params_key.is_empty() {
        outcome.to_string()
    } else {
        format!("{outcome}@{params_key}")
    }
}

/// `rounds=10,threads=4` from a params object: names sorted, strings unquoted, so the key does
/// not depend on how a JSON library orders object keys.
pub fn params_key(params: &Value) -> String {
    let Value::Object(map) = params else {
        return String::new();
    };
    let mut parts: Vec<String> = map
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    parts.sort();
    parts.join(",")
}

impl IndexedReceipt {
    /// Read the indexed fields of a receipt's text; the error names the missing field.
    pub fn parse(text: &str) -> Result<IndexedReceipt, IndexError> {
        let doc = qualify_model::json::from_str(text).map_err(IndexError::NotJson)?;
        let statement = statement_of(&doc)?;
        let predicate = statement.get("predicate").ok_or(IndexError::NoPredicate)?;
        let text_at = |v: &Value, path: &'static str| -> Result<String, IndexError> {
            v.pointer(path)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(IndexError::NoText(path))
        };
        let artifact = text_at(predicate, "/run/artifact/name")?;
        let claim_level = text_at(predicate, "/claim/level")?;
        let supported = predicate
            .pointer("/claim/supported")
            .and_then(Value::as_bool)
            .ok_or(IndexError::NoSupported)?;
        let incomplete = predicate
            .get("incomplete")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut cells = Vec::new();
        if let Some(list) = predicate.get("cells").and_then(Value::as_array) {
            for (i, c) in list.iter().enumerate() {
                let params = c
                    .get("params")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default()));
                let outcome = c
                    .pointer("/result/outcome")
                    .and_then(Value::as_str)
                    .ok_or(IndexError::NoOutcome(i))?
                    .to_string();
                let key = params_key(&params);
                cells.push(IndexedCell {
                    signature: signature(&outcome, &key),
                    params_key: key,
                    limits: c.pointer("/result/limits").cloned().unwrap_or(Value::Null),
                    control: c.get("control").and_then(Value::as_bool).unwrap_or(false),
                    boundary: c.get("boundary").and_then(Value::as_bool).unwrap_or(false),
                    params,
                    outcome,
                });
            }
        }
        Ok(IndexedReceipt {
            artifact,
            claim_level,
            supported,
            incomplete,
            started: predicate
                .pointer("/run/started")
                .and_then(Value::as_str)
                .map(str::to_string),
            finished: predicate
                .pointer("/run/finished")
                .and_then(Value::as_str)
                .map(str::to_string),
            cells,
            development: IndexedDevelopment::parse(predicate),
        })
    }
}

/// The Statement inside a DSSE envelope (base64 `payload`), or the document itself.
pub(crate) fn statement_of(doc: &Value) -> Result<std::borrow::Cow<'_, Value>, IndexError> {
    use base64::Engine as _;
    let Some(payload) = doc.get("payload").and_then(Value::as_str) else {
        return Ok(std::borrow::Cow::Borrowed(doc));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(IndexError::PayloadNotBase64)?;
    let inner = qualify_model::json::from_slice(&bytes).map_err(IndexError::PayloadNotJson)?;
    Ok(std::borrow::Cow::Owned(inner))
}
