//! One colour and one symbol per probe outcome (shared by the HTML heatmap and the Markdown map),
//! and the severity used when several cells fall on one square.

/// (outcome, symbol, fill colour, text colour), in legend order.
pub const OUTCOMES: [(&str, &str, &str, &str); 9] = [
    ("ok", "✓", "#2e7d32", "#fff"),
    ("exit_failure", "x", "#c62828", "#fff"),
    ("crash", "C", "#7f0000", "#fff"),
    ("oom_killed", "M", "#6a1b9a", "#fff"),
    ("deadlock", "D", "#e65100", "#fff"),
    ("livelock", "L", "#f9a825", "#000"),
    ("timeout", "T", "#1565c0", "#fff"),
    ("killed", "K", "#5d4037", "#fff"),
    ("interrupted", "?", "#9e9e9e", "#000"),
];

/// Squares with no cell.
pub const NOT_EXAMINED: (&str, &str, &str, &str) = ("not examined", "·", "#eeeeee", "#555");

/// Symbol, fill and text colour of an outcome (unknown outcomes get a neutral style).
pub fn style(outcome: &str) -> (&'static str, &'static str, &'static str) {
    OUTCOMES
        .iter()
        .find(|(o, ..)| *o == outcome)
        .map(|(_, s, f, t)| (*s, *f, *t))
        .unwrap_or(("?", "#424242", "#fff"))
}

/// Any failure outranks an interruption, which outranks ok.
pub fn severity(outcome: &str) -> u8 {
    match outcome {
        "ok" => 0,
        "interrupted" => 1,
        _ => 2,
    }
}
