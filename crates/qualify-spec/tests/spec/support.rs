//! Test helpers shared by every spec test module: parse a spec text and collect its
//! diagnostics as displayed, and compute the `path:line:col: error: ` a diagnostic must start
//! with independently of the crate's own offset conversion.

use qualify_spec::Spec;

/// The path every test spec is parsed as.
pub const PATH: &str = "dir/qualify.toml";

/// The smallest valid spec without axes: `[artifact]` and `[claim]`. Tests append sections.
pub const MINIMAL: &str =
    "[artifact]\nname = \"x\"\ncommand = \"true\"\n\n[claim]\nlevel = \"trial\"\n";

/// The spec, or its diagnostics as displayed.
pub fn parse(text: &str) -> Result<Spec, Vec<String>> {
    Spec::parse(text, PATH).map_err(|e| e.diagnostics().iter().map(ToString::to_string).collect())
}

/// A spec that must be valid.
pub fn valid(text: &str) -> Spec {
    parse(text).unwrap_or_else(|e| panic!("expected a valid spec, got:\n{}", e.join("\n")))
}

/// The diagnostics of an invalid spec, each as displayed.
pub fn errors(text: &str) -> Vec<String> {
    match parse(text) {
        Ok(spec) => panic!("expected errors, got {spec:#?}"),
        Err(e) => e,
    }
}

/// The single diagnostic of an invalid spec.
pub fn error(text: &str) -> String {
    let errors = errors(text);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors.into_iter().next().unwrap_or_default()
}

/// `dir/qualify.toml:line:col: error: ` for the `nth` occurrence of `needle` (plus `shift`
/// characters), computed independently of the crate's own conversion.
pub fn at(text: &str, needle: &str, nth: usize, shift: usize) -> String {
    let offset = text
        .match_indices(needle)
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("`{needle}` #{nth} not in text"));
    let line = text[..offset].lines().count() + usize::from(text[..offset].ends_with('\n'));
    let line = line.max(1);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1 + shift;
    format!("{PATH}:{line}:{column}: error: ")
}

/// `at` for the last occurrence of `needle`.
pub fn at_last(text: &str, needle: &str) -> String {
    let n = text.matches(needle).count();
    assert!(n > 0, "`{needle}` not in text");
    at(text, needle, n - 1, 0)
}

pub fn assert_starts(diagnostic: &str, prefix: &str, message: &str) {
    assert!(
        diagnostic.starts_with(&format!("{prefix}{message}")),
        "expected `{prefix}{message}…`, got:\n{diagnostic}"
    );
}

/// The single error of `text` points at the last `needle` and starts with `message`.
pub fn error_at(text: &str, needle: &str, message: &str) {
    assert_starts(&error(text), &at_last(text, needle), message);
}
