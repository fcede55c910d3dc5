//! The fault grammar: what a `fault` axis value means, its parser and its canonical text.
//!
//! Grammar (whitespace between the parts is allowed):
//!
//! ```text
//! fault     := kind [ '@' direction ] [ toxicity ]     (direction and toxicity in either order)
//! kind      := none | down | reset | blackhole               (on the wire)
//!            | latency(DURATION [, jitter DURATION])   (also `jitter=DURATION`)
//!            | bandwidth(RATE)                          (RATE: 16KiB/s, 500B/s, 1.5MB/s)
//!            | slow_close(DURATION)
//!            | fail_first(N)
//!            | kill | pause | restart                   (on the dependency's processes)
//!            | status(CODE [, share])                   (HTTP: CODE 400–599)
//!            | throttle(CODE [, retry_after DURATION] [, share])
//!            | http_delay(DURATION [, share])
//! direction := upstream | downstream
//! toxicity  := ('×' | 'x' | '*') NUMBER                 (a probability in (0, 1])
//! share     := toxicity                                 (inside the parentheses: per request)
//! ```
//!
//! `upstream` is the request direction (client → dependency), `downstream` the replies. `x0.5` and
//! `*0.5` are the ASCII spellings of `×0.5`; [`Fault`]'s `Display` writes the canonical form
//! (`latency(200ms, jitter 50ms)@upstream×0.5`, `status(503, ×0.3)`), which parses back to the
//! same value. A wire fault's toxicity is drawn per connection; an HTTP fault's share, written
//! inside its parentheses, per request (it is kept in [`Fault::toxicity`] too). Process and HTTP
//! faults take no direction and no toxicity outside the parentheses.
//!
//! Errors carry the byte range of the offending text inside the value ([`FaultError::span`]), so
//! the spec layer can point at `file:line:col`; [`FaultError::help`] says how to fix it.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::time::Duration;

use crate::units;

/// What the fault does, before direction and toxicity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// No fault: traffic passes clean (the control cell of a fault axis).
    None,
    /// Every chunk is delayed by `latency`, plus or minus up to `jitter` (uniform).
    Latency { latency: Duration, jitter: Duration },
    /// The dependency is unreachable: new connections are refused, open ones are closed at the
    /// window's start.
    Down,
    /// Every connection is reset (RST).
    Reset,
    /// Connections are accepted, data is swallowed and nothing is answered.
    Blackhole,
    /// Throughput is limited to `bytes_per_second`.
    Bandwidth { bytes_per_second: u64 },
    /// The close of a connection is delayed by `delay`.
    SlowClose { delay: Duration },
    /// The first `n` connections opened in the window are reset; later ones pass.
    FailFirst { n: u64 },
    /// The dependency's whole process tree is killed (SIGKILL) at the window's start and
    /// started again from the same data directory at its end (its own crash recovery).
    Kill,
    /// The dependency's whole process tree is stopped (SIGSTOP) for the window and continued
    /// (SIGCONT) at its end.
    Pause,
    /// The dependency is asked to stop (SIGTERM; SIGKILL after its grace) at the window's start
    /// and started again from the same data directory as soon as it is gone.
    Restart,
    /// A share of an HTTP dependency's replies in the window (the fault's toxicity, drawn per
    /// request) is replaced by an empty reply with this status; the request did reach the
    /// dependency.
    HttpStatus { code: u16 },
    /// A share of an HTTP dependency's requests in the window is answered by the proxy with
    /// `code` and `Retry-After: <seconds>`, without reaching the dependency.
    Throttle { code: u16, retry_after: Duration },
    /// A share of an HTTP dependency's requests in the window is held `delay` before it is
    /// forwarded (once per request, whatever its size).
    HttpDelay { delay: Duration },
}

impl FaultKind {
    /// The keyword, as written in a spec.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::None => "none",
            FaultKind::Latency { .. } => "latency",
            FaultKind::Down => "down",
            FaultKind::Reset => "reset",
            FaultKind::Blackhole => "blackhole",
            FaultKind::Bandwidth { .. } => "bandwidth",
            FaultKind::SlowClose { .. } => "slow_close",
            FaultKind::FailFirst { .. } => "fail_first",
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Restart => "restart",
            FaultKind::HttpStatus { .. } => "status",
            FaultKind::Throttle { .. } => "throttle",
            FaultKind::HttpDelay { .. } => "http_delay",
        }
    }

    /// A fault on the dependency's processes (`kill`, `pause`, `restart`): it needs a
    /// dependency qualify starts, and the proxy leaves the wire alone.
    pub fn is_process(&self) -> bool {
        matches!(
            self,
            FaultKind::Kill | FaultKind::Pause | FaultKind::Restart
        )
    }

    /// A fault on HTTP requests and replies (`status`, `throttle`, `http_delay`): it needs a
    /// dependency declared `protocol = "http"`.
    pub fn is_http(&self) -> bool {
        matches!(
            self,
            FaultKind::HttpStatus { .. } | FaultKind::Throttle { .. } | FaultKind::HttpDelay { .. }
        )
    }
}

/// The direction of a stream through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client → dependency: requests.
    Upstream,
    /// Dependency → client: replies.
    Downstream,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Upstream => "upstream",
            Direction::Downstream => "downstream",
        }
    }
}

/// A fault as a spec names it: kind, optional direction, toxicity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    /// `None`: the kind's default (see [`Fault::acts_on`]).
    pub direction: Option<Direction>,
    /// Probability in (0, 1] that a connection is affected; 1 unless written.
    pub toxicity: f64,
}

impl Fault {
    /// No fault.
    pub const NONE: Fault = Fault {
        kind: FaultKind::None,
        direction: None,
        toxicity: 1.0,
    };

    /// A fault of this kind in its default direction, on every connection.
    pub fn new(kind: FaultKind) -> Fault {
        Fault {
            kind,
            direction: None,
            toxicity: 1.0,
        }
    }

    pub fn is_none(&self) -> bool {
        self.kind == FaultKind::None
    }

    /// Whether the fault acts on the stream in direction `d`.
    ///
    /// Defaults without `@…`: `latency`, `bandwidth` and `slow_close` act on the replies
    /// (downstream, as toxiproxy's default stream); `blackhole` swallows both directions;
    /// `reset` and `fail_first` reset the connection as soon as it is accepted (and open
    /// connections at the window's start), which is neither stream — with `@upstream` they reset on
    /// the first request chunk (the request never reaches the dependency), with `@downstream` on
    /// the first reply chunk (the dependency did the work, the client never hears of it).
    pub fn acts_on(&self, d: Direction) -> bool {
        if self.kind.is_process() || self.kind.is_http() {
            return false;
        }
        match (self.kind, self.direction) {
            (FaultKind::None | FaultKind::Down, _) => false,
            (_, Some(dir)) => dir == d,
            (
                FaultKind::Latency { .. }
                | FaultKind::Bandwidth { .. }
                | FaultKind::SlowClose { .. },
                None,
            ) => d == Direction::Downstream,
            (FaultKind::Blackhole, None) => true,
            (FaultKind::Reset | FaultKind::FailFirst { .. }, None) => false,
            _ => false,
        }
    }

    /// For `reset` and `fail_first`: true when the connection is reset at once (no direction
    /// given), false when it is reset on its first chunk in the given direction.
    pub fn resets_at_once(&self) -> bool {
        matches!(self.kind, FaultKind::Reset | FaultKind::FailFirst { .. })
            && self.direction.is_none()
    }
}

impl Default for Fault {
    fn default() -> Fault {
        Fault::NONE
    }
}

/// Which kinds take a direction and a toxicity (outside the parentheses).
fn takes_direction(kind: &FaultKind) -> bool {
    !matches!(kind, FaultKind::None | FaultKind::Down) && !kind.is_process() && !kind.is_http()
}

fn takes_toxicity(kind: &FaultKind) -> bool {
    !matches!(
        kind,
        FaultKind::None | FaultKind::Down | FaultKind::FailFirst { .. }
    ) && !kind.is_process()
        && !kind.is_http()
}

/// `, ×0.3` inside an HTTP fault's parentheses (nothing for every request).
struct Share(f64);

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 != 1.0 {
            write!(f, ", ×{}", self.0)?;
        }
        Ok(())
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FaultKind::None
            | FaultKind::Down
            | FaultKind::Reset
            | FaultKind::Blackhole
            | FaultKind::Kill
            | FaultKind::Pause
            | FaultKind::Restart => f.write_str(self.kind.name())?,
            FaultKind::HttpStatus { code } => {
                return write!(f, "status({code}{})", Share(self.toxicity));
            }
            FaultKind::Throttle { code, retry_after } => {
                return write!(
                    f,
                    "throttle({code}, retry_after {}{})",
                    DurationText(retry_after),
                    Share(self.toxicity)
                );
            }
            FaultKind::HttpDelay { delay } => {
                return write!(
                    f,
                    "http_delay({}{})",
                    DurationText(delay),
                    Share(self.toxicity)
                );
            }
            FaultKind::Latency { latency, jitter } => {
                write!(f, "latency({}", DurationText(latency))?;
                if !jitter.is_zero() {
                    write!(f, ", jitter {}", DurationText(jitter))?;
                }
                f.write_str(")")?;
            }
            FaultKind::Bandwidth { bytes_per_second } => {
                write!(f, "bandwidth({})", RateText(bytes_per_second))?
            }
            FaultKind::SlowClose { delay } => write!(f, "slow_close({})", DurationText(delay))?,
            FaultKind::FailFirst { n } => write!(f, "fail_first({n})")?,
        }
        if let Some(d) = self.direction {
            write!(f, "@{}", d.name())?;
        }
        if self.toxicity != 1.0 {
            write!(f, "×{}", self.toxicity)?;
        }
        Ok(())
    }
}

impl FromStr for Fault {
    type Err = FaultError;
    fn from_str(s: &str) -> Result<Fault, FaultError> {
        parse(s)
    }
}

impl serde::Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Fault, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        parse(&text).map_err(serde::de::Error::custom)
    }
}

pub use crate::units::{DurationText, RateText};

/// A fault value that does not parse: where (byte range in the value) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct FaultError {
    /// Byte range of the offending text within the parsed value (empty at the end of input).
    pub span: Range<usize>,
    pub kind: FaultErrorKind,
}

impl FaultError {
    /// How to fix it, in one line.
    pub fn help(&self) -> String {
        self.kind.help()
    }
}

/// Why a fault value does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultErrorKind {
    #[error("empty fault")]
    Empty,
    #[error("expected a fault name, found `{found}`")]
    ExpectedName { found: String },
    #[error("unknown fault `{name}`")]
    UnknownName {
        name: String,
        suggestion: Option<&'static str>,
    },
    #[error("`{name}` needs an argument")]
    MissingArguments { name: &'static str },
    #[error("`{name}` takes no arguments")]
    UnexpectedArguments { name: &'static str },
    #[error("unclosed `(`")]
    UnclosedParen,
    #[error("empty argument to `{name}`")]
    EmptyArgument { name: &'static str },
    #[error("too many arguments to `{name}`")]
    TooManyArguments { name: &'static str },
    #[error("invalid duration `{text}`: {reason}")]
    BadDuration { text: String, reason: String },
    #[error("`{name}` of zero does nothing")]
    ZeroDuration { name: &'static str },
    #[error("invalid rate `{text}`: {reason}")]
    BadRate { text: String, reason: String },
    #[error("invalid count `{text}`: expected a whole number of connections")]
    BadCount { text: String },
    #[error("fail_first(0) resets no connection")]
    ZeroCount,
    #[error("unknown option `{option}` to `{name}`")]
    UnknownOption { name: &'static str, option: String },
    #[error("`{option}` given twice")]
    DuplicateOption { option: &'static str },
    #[error("jitter larger than the latency")]
    JitterExceedsLatency,
    #[error("unknown direction `{text}`")]
    BadDirection { text: String },
    #[error("`{name}` has no direction")]
    DirectionNotApplicable { name: &'static str },
    #[error("direction given twice")]
    DuplicateDirection,
    #[error("invalid toxicity `{text}`: expected a probability such as 0.5")]
    BadToxicity { text: String },
    #[error("toxicity {text} is outside (0, 1]")]
    ToxicityOutOfRange { text: String },
    #[error("`{name}` takes no toxicity")]
    ToxicityNotApplicable { name: &'static str },
    #[error("toxicity given twice")]
    DuplicateToxicity,
    #[error("unexpected `{text}` after the fault")]
    Trailing { text: String },
    #[error("invalid status `{text}`: expected an HTTP error status from 400 to 599")]
    BadStatus { text: String },
    #[error("retry_after {text} is not a whole number of seconds")]
    NotWholeSeconds { text: String },
    #[error("share given twice")]
    DuplicateShare,
}

const NAMES: [&str; 14] = [
    "none",
    "latency",
    "down",
    "reset",
    "blackhole",
    "bandwidth",
    "slow_close",
    "fail_first",
    "kill",
    "pause",
    "restart",
    "status",
    "throttle",
    "http_delay",
];

const FORMS: &str = "none | latency(200ms[, jitter 50ms]) | down | reset | blackhole | bandwidth(16KiB/s) | slow_close(1s) | fail_first(N) | kill | pause | restart | status(503[, ×0.3]) | throttle(429[, retry_after 1s][, ×0.3]) | http_delay(200ms[, ×0.3])";

impl FaultErrorKind {
    pub fn help(&self) -> String {
        use FaultErrorKind as K;
        match self {
            K::Empty | K::ExpectedName { .. } => format!("a fault is one of: {FORMS}"),
            K::UnknownName { suggestion, .. } => match suggestion {
                Some(s) => format!("did you mean `{s}`? a fault is one of: {FORMS}"),
                None => format!("a fault is one of: {FORMS}"),
            },
            K::MissingArguments { name } => format!("write it as {}", example(name)),
            K::UnexpectedArguments { name } => {
                format!("write `{name}` alone; it can be narrowed with @upstream/@downstream or ×0.5 where that applies")
            }
            K::UnclosedParen => "close the argument list with `)`".into(),
            K::EmptyArgument { name } | K::TooManyArguments { name } => {
                format!("write it as {}", example(name))
            }
            K::BadDuration { .. } => {
                "a duration is a number and a unit: 200ms, 1.5s, 500us (units ns, us, ms, s, m, h)".into()
            }
            K::ZeroDuration { name } => {
                format!("give `{name}` a positive duration, or use `none` for no fault")
            }
            K::BadRate { .. } => {
                "a rate is a size per second: 16KiB/s, 500B/s, 1.5MB/s (KiB, MiB, GiB and K, M, G are 1024-based; KB, MB, GB are 1000-based, in any case)".into()
            }
            K::BadCount { .. } => "write the number of connections to reset, e.g. fail_first(3)".into(),
            K::ZeroCount => "give a count of at least 1, or use `none` for no fault".into(),
            K::UnknownOption { name, .. } => format!("write it as {}", example(name)),
            K::DuplicateOption { option } => format!("give `{option}` once"),
            K::JitterExceedsLatency => {
                "jitter is ± around the latency and a delay cannot be negative: make jitter at most the latency".into()
            }
            K::BadDirection { .. } => {
                "a direction is @upstream (requests, client → dependency) or @downstream (replies)".into()
            }
            K::DirectionNotApplicable { name } => {
                format!("remove the @direction: `{name}` acts on the whole dependency")
            }
            K::DuplicateDirection => "give one direction: @upstream or @downstream".into(),
            K::BadToxicity { .. } | K::ToxicityOutOfRange { .. } => {
                "toxicity is the probability that a connection is affected, in (0, 1]: ×0.5 (or x0.5, *0.5)".into()
            }
            K::ToxicityNotApplicable { name } => match *name {
                "down" => "`down` is all or nothing; for a fraction of connections use reset×0.5".into(),
                "fail_first" => "fail_first counts connections exactly; remove the ×toxicity".into(),
                "kill" | "pause" | "restart" => format!(
                    "`{name}` acts on the dependency's whole process tree: remove the ×toxicity"
                ),
                "status" | "throttle" | "http_delay" => format!(
                    "an HTTP fault's share of requests goes inside its parentheses: {}",
                    example(name)
                ),
                _ => format!("remove the ×toxicity from `{name}`"),
            },
            K::DuplicateToxicity => "give the toxicity once".into(),
            K::BadStatus { .. } => {
                "write the status the replies get, e.g. status(503) or throttle(429, retry_after 1s)".into()
            }
            K::NotWholeSeconds { .. } => {
                "Retry-After carries whole seconds: write retry_after 1s, 2s, …".into()
            }
            K::DuplicateShare => "give the share once, e.g. status(503, ×0.3)".into(),
            K::Trailing { .. } => format!(
                "after the fault only @upstream/@downstream and ×toxicity may follow; a fault is one of: {FORMS}"
            ),
        }
    }
}

fn example(name: &str) -> &'static str {
    match name {
        "latency" => "latency(200ms) or latency(200ms, jitter 50ms)",
        "bandwidth" => "bandwidth(16KiB/s)",
        "slow_close" => "slow_close(1s)",
        "fail_first" => "fail_first(3)",
        "status" => "status(503) or status(503, ×0.3) (a share of the replies)",
        "throttle" => "throttle(429, retry_after 1s) or throttle(429, retry_after 1s, ×0.3)",
        "http_delay" => "http_delay(200ms) or http_delay(200ms, ×0.3)",
        _ => FORMS,
    }
}

/// Parse a fault value (`latency(200ms)@upstream×0.5`).
pub fn parse(text: &str) -> Result<Fault, FaultError> {
    Parser { text, pos: 0 }.fault()
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

fn err<T>(span: Range<usize>, kind: FaultErrorKind) -> Result<T, FaultError> {
    Err(FaultError { span, kind })
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.text.len() - trimmed.len();
    }

    /// An identifier (letters, digits, `_`) starting at the current position.
    fn ident(&mut self) -> Range<usize> {
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !is_ident(c))
            .unwrap_or(self.rest().len());
        self.pos += len;
        start..self.pos
    }

    /// `downx0.5`, `upstreamx0.5`: the identifier swallowed an ASCII toxicity marker. If
    /// `known(word)` is false but the word splits into a known prefix + `x` + a number, give the
    /// `x…` back to the input and return the prefix.
    fn split_toxicity(&mut self, span: Range<usize>, known: impl Fn(&str) -> bool) -> Range<usize> {
        let word = &self.text[span.clone()];
        if known(word) {
            return span;
        }
        if let Some(i) = word.find('x') {
            let (head, tail) = word.split_at(i);
            let after = &tail[1..];
            if known(head) && after.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                self.pos = span.start + i;
                return span.start..span.start + i;
            }
        }
        span
    }

    fn fault(mut self) -> Result<Fault, FaultError> {
        self.skip_ws();
        if self.rest().is_empty() {
            return err(0..self.text.len(), FaultErrorKind::Empty);
        }
        let name_span = self.ident();
        if name_span.is_empty() {
            let c = self.peek().map(String::from).unwrap_or_default();
            return err(
                self.pos..self.pos + c.len(),
                FaultErrorKind::ExpectedName { found: c },
            );
        }
        let name_span = self.split_toxicity(name_span, |w| NAMES.contains(&w));
        let name = &self.text[name_span.clone()];
        let Some(name) = NAMES.iter().copied().find(|n| *n == name) else {
            return err(
                name_span,
                FaultErrorKind::UnknownName {
                    name: name.to_string(),
                    suggestion: suggest(name),
                },
            );
        };
        self.skip_ws();
        let args = if self.peek() == Some('(') {
            let open = self.pos;
            let Some(close) = self.rest().find(')') else {
                return err(open..self.text.len(), FaultErrorKind::UnclosedParen);
            };
            self.pos += close + 1;
            Some((open + 1, open + 1 + close - 1))
        } else {
            None
        };
        let kind = self.kind(name, &name_span, args)?;
        let mut fault = Fault::new(kind);
        if let (true, Some((a, b))) = (kind.is_http(), args) {
            fault.toxicity = self.http(name, &self.arguments(a, b))?.1;
        }
        let mut direction_seen = false;
        let mut toxicity_seen = false;
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else { break };
            let start = self.pos;
            if c == '@' {
                self.pos += 1;
                let span = self.ident();
                let span = self.split_toxicity(span, |w| w == "upstream" || w == "downstream");
                let word = &self.text[span.clone()];
                let direction = match word {
                    "upstream" => Direction::Upstream,
                    "downstream" => Direction::Downstream,
                    _ => {
                        return err(
                            start..span.end.max(start + 1),
                            FaultErrorKind::BadDirection {
                                text: format!("@{word}"),
                            },
                        );
                    }
                };
                if !takes_direction(&kind) {
                    return err(
                        start..span.end,
                        FaultErrorKind::DirectionNotApplicable { name },
                    );
                }
                if direction_seen {
                    return err(start..span.end, FaultErrorKind::DuplicateDirection);
                }
                direction_seen = true;
                fault.direction = Some(direction);
            } else if c == '×' || c == 'x' || c == '*' {
                self.pos += c.len_utf8();
                let num_start = self.pos;
                let len = self
                    .rest()
                    .find(|c: char| {
                        !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' || c == '+')
                    })
                    .unwrap_or(self.rest().len());
                self.pos += len;
                let text = &self.text[num_start..self.pos];
                let span = start..self.pos;
                let value: f64 = match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => v,
                    _ => {
                        return err(
                            span,
                            FaultErrorKind::BadToxicity {
                                text: text.to_string(),
                            },
                        );
                    }
                };
                if !(value > 0.0 && value <= 1.0) {
                    return err(
                        span,
                        FaultErrorKind::ToxicityOutOfRange {
                            text: text.to_string(),
                        },
                    );
                }
                if !takes_toxicity(&kind) {
                    return err(span, FaultErrorKind::ToxicityNotApplicable { name });
                }
                if toxicity_seen {
                    return err(span, FaultErrorKind::DuplicateToxicity);
                }
                toxicity_seen = true;
                fault.toxicity = value;
            } else {
                let span = start..self.text.len();
                return err(
                    span,
                    FaultErrorKind::Trailing {
                        text: self.rest().to_string(),
                    },
                );
            }
        }
        Ok(fault)
    }

    /// The kind from its name and the byte range inside its parentheses (if any).
    fn kind(
        &self,
        name: &'static str,
        name_span: &Range<usize>,
        args: Option<(usize, usize)>,
    ) -> Result<FaultKind, FaultError> {
        let no_args = |kind| match args {
            None => Ok(kind),
            Some((a, b)) => err(a - 1..b + 1, FaultErrorKind::UnexpectedArguments { name }),
        };
        let Some((a, b)) = args else {
            return match name {
                "none" => Ok(FaultKind::None),
                "down" => Ok(FaultKind::Down),
                "reset" => Ok(FaultKind::Reset),
                "blackhole" => Ok(FaultKind::Blackhole),
                "kill" => Ok(FaultKind::Kill),
                "pause" => Ok(FaultKind::Pause),
                "restart" => Ok(FaultKind::Restart),
                _ => err(name_span.clone(), FaultErrorKind::MissingArguments { name }),
            };
        };
        let parts = self.arguments(a, b);
        match name {
            "none" => no_args(FaultKind::None),
            "down" => no_args(FaultKind::Down),
            "reset" => no_args(FaultKind::Reset),
            "blackhole" => no_args(FaultKind::Blackhole),
            "kill" => no_args(FaultKind::Kill),
            "pause" => no_args(FaultKind::Pause),
            "restart" => no_args(FaultKind::Restart),
            "status" | "throttle" | "http_delay" => self.http(name, &parts).map(|(k, _)| k),
            "latency" => {
                let latency = self.duration(name, &parts[0])?;
                let mut jitter = None;
                for part in &parts[1..] {
                    if part.is_empty() {
                        return err(part.clone(), FaultErrorKind::EmptyArgument { name });
                    }
                    let text = &self.text[part.clone()];
                    let key_len = text.find(|c: char| !is_ident(c)).unwrap_or(text.len());
                    let key = &text[..key_len];
                    if key != "jitter" {
                        return err(
                            part.start..part.start + key_len.max(1),
                            FaultErrorKind::UnknownOption {
                                name,
                                option: key.to_string(),
                            },
                        );
                    }
                    if jitter.is_some() {
                        return err(
                            part.clone(),
                            FaultErrorKind::DuplicateOption { option: "jitter" },
                        );
                    }
                    let mut value = part.start + key_len..part.end;
                    let after = &self.text[value.clone()];
                    let after_trim = after.trim_start();
                    value.start += after.len() - after_trim.len();
                    if after_trim.starts_with('=') {
                        value = trim_span(self.text, value.start + 1..value.end);
                    }
                    if value.is_empty() {
                        return err(part.clone(), FaultErrorKind::EmptyArgument { name });
                    }
                    let j = parse_duration(&self.text[value.clone()]).map_err(|e| FaultError {
                        span: value.clone(),
                        kind: FaultErrorKind::BadDuration {
                            text: self.text[value.clone()].to_string(),
                            reason: e.reason,
                        },
                    })?;
                    if j > latency {
                        return err(part.clone(), FaultErrorKind::JitterExceedsLatency);
                    }
                    jitter = Some(j);
                }
                Ok(FaultKind::Latency {
                    latency,
                    jitter: jitter.unwrap_or_default(),
                })
            }
            "slow_close" => {
                self.only_one(name, &parts)?;
                Ok(FaultKind::SlowClose {
                    delay: self.duration(name, &parts[0])?,
                })
            }
            "bandwidth" => {
                self.only_one(name, &parts)?;
                let span = parts[0].clone();
                if span.is_empty() {
                    return err(span, FaultErrorKind::EmptyArgument { name });
                }
                let text = &self.text[span.clone()];
                let bytes_per_second = parse_rate(text).map_err(|e| FaultError {
                    span,
                    kind: FaultErrorKind::BadRate {
                        text: text.to_string(),
                        reason: e.reason,
                    },
                })?;
                Ok(FaultKind::Bandwidth { bytes_per_second })
            }
            "fail_first" => {
                self.only_one(name, &parts)?;
                let span = parts[0].clone();
                if span.is_empty() {
                    return err(span, FaultErrorKind::EmptyArgument { name });
                }
                let text = &self.text[span.clone()];
                let n: u64 = text.parse().map_err(|_| FaultError {
                    span: span.clone(),
                    kind: FaultErrorKind::BadCount {
                        text: text.to_string(),
                    },
                })?;
                if n == 0 {
                    return err(span, FaultErrorKind::ZeroCount);
                }
                Ok(FaultKind::FailFirst { n })
            }
            // Every name in NAMES has a case above.
            _ => err(
                name_span.clone(),
                FaultErrorKind::UnknownName {
                    name: name.to_string(),
                    suggestion: None,
                },
            ),
        }
    }

    /// The argument list between `a` and `b`, split on commas: each argument's trimmed range.
    fn arguments(&self, a: usize, b: usize) -> Vec<Range<usize>> {
        let mut parts: Vec<Range<usize>> = Vec::new();
        let mut start = a;
        for (i, c) in self.text[a..b].char_indices() {
            if c == ',' {
                parts.push(trim_span(self.text, start..a + i));
                start = a + i + 1;
            }
        }
        parts.push(trim_span(self.text, start..b));
        parts
    }

    /// `status(CODE[, ×share])`, `throttle(CODE[, retry_after D][, ×share])`,
    /// `http_delay(D[, ×share])`: the kind and the share of requests (1 unless written).
    fn http(
        &self,
        name: &'static str,
        parts: &[Range<usize>],
    ) -> Result<(FaultKind, f64), FaultError> {
        let first = parts[0].clone();
        if first.is_empty() {
            return err(first, FaultErrorKind::EmptyArgument { name });
        }
        let mut share = None;
        let mut retry_after = None;
        for part in &parts[1..] {
            if part.is_empty() {
                return err(part.clone(), FaultErrorKind::EmptyArgument { name });
            }
            let text = &self.text[part.clone()];
            if let Some(number) = share_number(text) {
                let value = match number.trim().parse::<f64>() {
                    Ok(v) if v.is_finite() => v,
                    _ => {
                        return err(
                            part.clone(),
                            FaultErrorKind::BadToxicity {
                                text: number.trim().to_string(),
                            },
                        );
                    }
                };
                if !(value > 0.0 && value <= 1.0) {
                    return err(
                        part.clone(),
                        FaultErrorKind::ToxicityOutOfRange {
                            text: number.trim().to_string(),
                        },
                    );
                }
                if share.is_some() {
                    return err(part.clone(), FaultErrorKind::DuplicateShare);
                }
                share = Some(value);
                continue;
            }
            let key_len = text.find(|c: char| !is_ident(c)).unwrap_or(text.len());
            let key = &text[..key_len];
            if name != "throttle" || key != "retry_after" {
                return err(
                    part.start..part.start + key_len.max(1),
                    FaultErrorKind::UnknownOption {
                        name,
                        option: key.to_string(),
                    },
                );
            }
            if retry_after.is_some() {
                return err(
                    part.clone(),
                    FaultErrorKind::DuplicateOption {
                        option: "retry_after",
                    },
                );
            }
            let mut value = part.start + key_len..part.end;
            let after = &self.text[value.clone()];
            let after_trim = after.trim_start();
            value.start += after.len() - after_trim.len();
            if after_trim.starts_with('=') {
                value = trim_span(self.text, value.start + 1..value.end);
            }
            if value.is_empty() {
                return err(part.clone(), FaultErrorKind::EmptyArgument { name });
            }
            let text = &self.text[value.clone()];
            let d = parse_duration(text).map_err(|e| FaultError {
                span: value.clone(),
                kind: FaultErrorKind::BadDuration {
                    text: text.to_string(),
                    reason: e.reason,
                },
            })?;
            if d.subsec_nanos() != 0 {
                return err(
                    value,
                    FaultErrorKind::NotWholeSeconds {
                        text: text.to_string(),
                    },
                );
            }
            retry_after = Some(d);
        }
        let code = |span: &Range<usize>| {
            let text = &self.text[span.clone()];
            text.parse::<u16>()
                .ok()
                .filter(|c| (400..=599).contains(c))
                .ok_or_else(|| FaultError {
                    span: span.clone(),
                    kind: FaultErrorKind::BadStatus {
                        text: text.to_string(),
                    },
                })
        };
        let kind = match name {
            "status" => FaultKind::HttpStatus {
                code: code(&first)?,
            },
            "throttle" => FaultKind::Throttle {
                code: code(&first)?,
                retry_after: retry_after.unwrap_or(Duration::from_secs(1)),
            },
            _ => FaultKind::HttpDelay {
                delay: self.duration(name, &first)?,
            },
        };
        Ok((kind, share.unwrap_or(1.0)))
    }

    fn only_one(&self, name: &'static str, parts: &[Range<usize>]) -> Result<(), FaultError> {
        if parts.len() > 1 {
            let span = parts[1].start..parts[parts.len() - 1].end;
            return err(span, FaultErrorKind::TooManyArguments { name });
        }
        Ok(())
    }

    fn duration(&self, name: &'static str, span: &Range<usize>) -> Result<Duration, FaultError> {
        if span.is_empty() {
            return err(span.clone(), FaultErrorKind::EmptyArgument { name });
        }
        let text = &self.text[span.clone()];
        let d = parse_duration(text).map_err(|e| FaultError {
            span: span.clone(),
            kind: FaultErrorKind::BadDuration {
                text: text.to_string(),
                reason: e.reason,
            },
        })?;
        if d.is_zero() {
            return err(span.clone(), FaultErrorKind::ZeroDuration { name });
        }
        Ok(d)
    }
}

/// The number of a share written `×0.3`, `x0.3` or `*0.3` (an ASCII `x` only before a digit or
/// a point), if `text` is one.
fn share_number(text: &str) -> Option<&str> {
    if let Some(rest) = text.strip_prefix('×').or_else(|| text.strip_prefix('*')) {
        return Some(rest);
    }
    let rest = text.strip_prefix('x')?;
    rest.trim_start()
        .starts_with(|c: char| c.is_ascii_digit() || c == '.')
        .then_some(rest)
}

fn trim_span(text: &str, span: Range<usize>) -> Range<usize> {
    let s = &text[span.clone()];
    if s.trim().is_empty() {
        return span.end..span.end;
    }
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    span.start + lead..span.end - trail
}

/// A known name within edit distance 2 of `name`, if any.
fn suggest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    NAMES
        .iter()
        .map(|n| (edit_distance(&lower, n), *n))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
        .or(match lower.as_str() {
            "timeout" | "partition" | "drop" => Some("blackhole"),
            "outage" | "disabled" | "off" => Some("down"),
            "reset_peer" | "rst" => Some("reset"),
            "delay" => Some("latency"),
            "crash" | "sigkill" => Some("kill"),
            "freeze" | "stop" | "sigstop" | "suspend" => Some("pause"),
            "bounce" | "reboot" => Some("restart"),
            "http_status" | "error" => Some("status"),
            "ratelimit" | "rate_limit" | "429" => Some("throttle"),
            _ => None,
        })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A duration inside a fault value: the spec's one grammar ([`crate::units`]), a unit
/// always required (`200ms`, `1.5s`, `500us`).
pub fn parse_duration(text: &str) -> Result<Duration, units::UnitError> {
    units::parse_duration(text)
}

/// `16KiB/s`, `500B/s`, `1.5MB/s` → bytes per second (at least 1): the spec's one size
/// grammar per second ([`crate::units`]).
pub fn parse_rate(text: &str) -> Result<u64, units::UnitError> {
    units::parse_rate(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn valid_values_parse_to_the_expected_fault_and_print_canonically() {
        use Direction::*;
        use FaultKind::*;
        // (input, kind, direction, toxicity, canonical text)
        let cases: Vec<(&str, FaultKind, Option<Direction>, f64, &str)> = vec![
            ("none", None, Option::None, 1.0, "none"),
            ("  none  ", None, Option::None, 1.0, "none"),
            ("down", Down, Option::None, 1.0, "down"),
            ("reset", Reset, Option::None, 1.0, "reset"),
            ("blackhole", Blackhole, Option::None, 1.0, "blackhole"),
            (
                "latency(200ms)",
                Latency {
                    latency: ms(200),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(200ms)",
            ),
            (
                "latency( 200ms , jitter 50ms )",
                Latency {
                    latency: ms(200),
                    jitter: ms(50),
                },
                Option::None,
                1.0,
                "latency(200ms, jitter 50ms)",
            ),
            (
                "latency(200ms, jitter=50ms)",
                Latency {
                    latency: ms(200),
                    jitter: ms(50),
                },
                Option::None,
                1.0,
                "latency(200ms, jitter 50ms)",
            ),
            (
                "latency(1.5s)",
                Latency {
                    latency: ms(1500),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(1500ms)",
            ),
            (
                "latency(2s)",
                Latency {
                    latency: ms(2000),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(2s)",
            ),
            (
                "latency(250us)",
                Latency {
                    latency: Duration::from_micros(250),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(250us)",
            ),
            (
                "latency(250µs)",
                Latency {
                    latency: Duration::from_micros(250),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(250us)",
            ),
            (
                "latency(0.1s)",
                Latency {
                    latency: ms(100),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(100ms)",
            ),
            (
                "latency(1m)",
                Latency {
                    latency: ms(60_000),
                    jitter: ms(0),
                },
                Option::None,
                1.0,
                "latency(60s)",
            ),
            (
                "latency(200ms, jitter 200ms)",
                Latency {
                    latency: ms(200),
                    jitter: ms(200),
                },
                Option::None,
                1.0,
                "latency(200ms, jitter 200ms)",
            ),
            (
                "bandwidth(16KiB/s)",
                Bandwidth {
                    bytes_per_second: 16384,
                },
                Option::None,
                1.0,
                "bandwidth(16KiB/s)",
            ),
            (
                "bandwidth(16KB/s)",
                Bandwidth {
                    bytes_per_second: 16000,
                },
                Option::None,
                1.0,
                "bandwidth(16000B/s)",
            ),
            (
                // `kb` is 1000 bytes here as in a memory ceiling (one size grammar).
                "bandwidth(16kb/s)",
                Bandwidth {
                    bytes_per_second: 16000,
                },
                Option::None,
                1.0,
                "bandwidth(16000B/s)",
            ),
            (
                "bandwidth(1.5MiB/s)",
                Bandwidth {
                    bytes_per_second: 1_572_864,
                },
                Option::None,
                1.0,
                "bandwidth(1536KiB/s)",
            ),
            (
                "bandwidth(500B/s)",
                Bandwidth {
                    bytes_per_second: 500,
                },
                Option::None,
                1.0,
                "bandwidth(500B/s)",
            ),
            (
                "bandwidth(2GiB/s)",
                Bandwidth {
                    bytes_per_second: 2 << 30,
                },
                Option::None,
                1.0,
                "bandwidth(2GiB/s)",
            ),
            (
                "slow_close(1s)",
                SlowClose { delay: ms(1000) },
                Option::None,
                1.0,
                "slow_close(1s)",
            ),
            (
                "fail_first(3)",
                FailFirst { n: 3 },
                Option::None,
                1.0,
                "fail_first(3)",
            ),
            (
                "latency(200ms)@upstream",
                Latency {
                    latency: ms(200),
                    jitter: ms(0),
                },
                Some(Upstream),
                1.0,
                "latency(200ms)@upstream",
            ),
            (
                "blackhole@downstream",
                Blackhole,
                Some(Downstream),
                1.0,
                "blackhole@downstream",
            ),
            (
                "reset@upstream×0.5",
                Reset,
                Some(Upstream),
                0.5,
                "reset@upstream×0.5",
            ),
            (
                "reset ×0.5 @downstream",
                Reset,
                Some(Downstream),
                0.5,
                "reset@downstream×0.5",
            ),
            ("reset x0.25", Reset, Option::None, 0.25, "reset×0.25"),
            ("resetx0.25", Reset, Option::None, 0.25, "reset×0.25"),
            (
                "reset@upstreamx0.25",
                Reset,
                Some(Upstream),
                0.25,
                "reset@upstream×0.25",
            ),
            ("reset*0.1", Reset, Option::None, 0.1, "reset×0.1"),
            ("reset×1", Reset, Option::None, 1.0, "reset"),
            (
                "latency(200ms)x.5",
                Latency {
                    latency: ms(200),
                    jitter: ms(0),
                },
                Option::None,
                0.5,
                "latency(200ms)×0.5",
            ),
            (
                "fail_first(2)@downstream",
                FailFirst { n: 2 },
                Some(Downstream),
                1.0,
                "fail_first(2)@downstream",
            ),
            (
                "slow_close(1s)@upstream*0.75",
                SlowClose { delay: ms(1000) },
                Some(Upstream),
                0.75,
                "slow_close(1s)@upstream×0.75",
            ),
        ];
        let more: Vec<(&str, FaultKind, Option<Direction>, f64, &str)> = vec![
            ("kill", Kill, Option::None, 1.0, "kill"),
            (" pause ", Pause, Option::None, 1.0, "pause"),
            ("restart", Restart, Option::None, 1.0, "restart"),
            (
                "status(503)",
                HttpStatus { code: 503 },
                Option::None,
                1.0,
                "status(503)",
            ),
            (
                "status(503, x0.3)",
                HttpStatus { code: 503 },
                Option::None,
                0.3,
                "status(503, ×0.3)",
            ),
            (
                "status( 500 , *0.5 )",
                HttpStatus { code: 500 },
                Option::None,
                0.5,
                "status(500, ×0.5)",
            ),
            (
                "throttle(429)",
                Throttle {
                    code: 429,
                    retry_after: ms(1000),
                },
                Option::None,
                1.0,
                "throttle(429, retry_after 1s)",
            ),
            (
                "throttle(429, retry_after 2s, ×0.5)",
                Throttle {
                    code: 429,
                    retry_after: ms(2000),
                },
                Option::None,
                0.5,
                "throttle(429, retry_after 2s, ×0.5)",
            ),
            (
                "throttle(503, x0.25, retry_after=0s)",
                Throttle {
                    code: 503,
                    retry_after: ms(0),
                },
                Option::None,
                0.25,
                "throttle(503, retry_after 0s, ×0.25)",
            ),
            (
                "http_delay(200ms)",
                HttpDelay { delay: ms(200) },
                Option::None,
                1.0,
                "http_delay(200ms)",
            ),
            (
                "http_delay(1.5s, x.5)",
                HttpDelay { delay: ms(1500) },
                Option::None,
                0.5,
                "http_delay(1500ms, ×0.5)",
            ),
        ];
        for (input, kind, direction, toxicity, canonical) in cases.into_iter().chain(more) {
            let fault = parse(input).unwrap_or_else(|e| panic!("{input:?}: {e} at {:?}", e.span));
            assert_eq!(fault.kind, kind, "{input:?}");
            assert_eq!(fault.direction, direction, "{input:?}");
            assert_eq!(fault.toxicity, toxicity, "{input:?}");
            assert_eq!(fault.to_string(), canonical, "{input:?}");
            assert_eq!(
                parse(canonical).ok(),
                Some(fault),
                "{canonical:?} round trip"
            );
        }
    }

    #[test]
    fn every_error_has_its_kind_span_and_a_help_line() {
        use FaultErrorKind as K;
        // (input, the text the span covers, expected kind, a word the help must contain)
        let cases: Vec<(&str, &str, K, &str)> = vec![
            ("", "", K::Empty, "one of"),
            ("   ", "   ", K::Empty, "one of"),
            (
                "(200ms)",
                "(",
                K::ExpectedName { found: "(".into() },
                "one of",
            ),
            (
                "latancy(200ms)",
                "latancy",
                K::UnknownName {
                    name: "latancy".into(),
                    suggestion: Some("latency"),
                },
                "did you mean `latency`",
            ),
            (
                "timeout",
                "timeout",
                K::UnknownName {
                    name: "timeout".into(),
                    suggestion: Some("blackhole"),
                },
                "blackhole",
            ),
            (
                "partition",
                "partition",
                K::UnknownName {
                    name: "partition".into(),
                    suggestion: Some("blackhole"),
                },
                "blackhole",
            ),
            (
                "explode",
                "explode",
                K::UnknownName {
                    name: "explode".into(),
                    suggestion: None,
                },
                "one of",
            ),
            (
                "latency",
                "latency",
                K::MissingArguments { name: "latency" },
                "latency(200ms)",
            ),
            (
                "bandwidth",
                "bandwidth",
                K::MissingArguments { name: "bandwidth" },
                "bandwidth(16KiB/s)",
            ),
            (
                "slow_close",
                "slow_close",
                K::MissingArguments { name: "slow_close" },
                "slow_close(1s)",
            ),
            (
                "fail_first",
                "fail_first",
                K::MissingArguments { name: "fail_first" },
                "fail_first(3)",
            ),
            (
                "down(5s)",
                "(5s)",
                K::UnexpectedArguments { name: "down" },
                "alone",
            ),
            (
                "reset()",
                "()",
                K::UnexpectedArguments { name: "reset" },
                "alone",
            ),
            ("latency(200ms", "(200ms", K::UnclosedParen, ")"),
            (
                "latency()",
                "",
                K::EmptyArgument { name: "latency" },
                "latency(200ms)",
            ),
            (
                "latency(200ms, )",
                "",
                K::EmptyArgument { name: "latency" },
                "latency(200ms)",
            ),
            (
                "latency(200ms, jitter)",
                "jitter",
                K::EmptyArgument { name: "latency" },
                "jitter 50ms",
            ),
            (
                "bandwidth()",
                "",
                K::EmptyArgument { name: "bandwidth" },
                "bandwidth(",
            ),
            (
                "fail_first()",
                "",
                K::EmptyArgument { name: "fail_first" },
                "fail_first(3)",
            ),
            (
                "slow_close(1s, 2s)",
                "2s",
                K::TooManyArguments { name: "slow_close" },
                "slow_close(1s)",
            ),
            (
                "bandwidth(1KiB/s, 2KiB/s)",
                "2KiB/s",
                K::TooManyArguments { name: "bandwidth" },
                "bandwidth(",
            ),
            (
                "fail_first(1, 2)",
                "2",
                K::TooManyArguments { name: "fail_first" },
                "fail_first(3)",
            ),
            (
                "latency(200)",
                "200",
                K::BadDuration {
                    text: "200".into(),
                    reason: "missing unit (ns, us, ms, s, m, h)".into(),
                },
                "number and a unit",
            ),
            (
                "latency(200secs2)",
                "200secs2",
                K::BadDuration {
                    text: "200secs2".into(),
                    reason: "missing unit (ns, us, ms, s, m, h)".into(),
                },
                "units",
            ),
            (
                "latency(200xs)",
                "200xs",
                K::BadDuration {
                    text: "200xs".into(),
                    reason: "unknown unit `xs` (ns, us, ms, s, m, h)".into(),
                },
                "units",
            ),
            (
                "latency(ms)",
                "ms",
                K::BadDuration {
                    text: "ms".into(),
                    reason: "expected a number before the unit".into(),
                },
                "number",
            ),
            (
                "latency(-5ms)",
                "-5ms",
                K::BadDuration {
                    text: "-5ms".into(),
                    reason: "expected a number before the unit".into(),
                },
                "number",
            ),
            (
                "latency(1.2.3s)",
                "1.2.3s",
                K::BadDuration {
                    text: "1.2.3s".into(),
                    reason: "unexpected `.`".into(),
                },
                "number",
            ),
            (
                "latency(0.5ns)",
                "0.5ns",
                K::BadDuration {
                    text: "0.5ns".into(),
                    reason: "too large, or finer than a nanosecond".into(),
                },
                "number",
            ),
            (
                "latency(0ms)",
                "0ms",
                K::ZeroDuration { name: "latency" },
                "none",
            ),
            (
                "slow_close(0s)",
                "0s",
                K::ZeroDuration { name: "slow_close" },
                "none",
            ),
            (
                "latency(200ms, jitter 50)",
                "50",
                K::BadDuration {
                    text: "50".into(),
                    reason: "missing unit (ns, us, ms, s, m, h)".into(),
                },
                "unit",
            ),
            (
                "bandwidth(16KiB)",
                "16KiB",
                K::BadRate {
                    text: "16KiB".into(),
                    reason: "missing `/s`".into(),
                },
                "/s",
            ),
            (
                "bandwidth(16kbit/s)",
                "16kbit/s",
                K::BadRate {
                    text: "16kbit/s".into(),
                    reason: "bits are not accepted: every size is bytes (B, KB, KiB, …)".into(),
                },
                "size per second",
            ),
            (
                "bandwidth(16XB/s)",
                "16XB/s",
                K::BadRate {
                    text: "16XB/s".into(),
                    reason: "unknown unit `XB`".into(),
                },
                "KiB",
            ),
            (
                "bandwidth(0KiB/s)",
                "0KiB/s",
                K::BadRate {
                    text: "0KiB/s".into(),
                    reason: "below 1 byte per second".into(),
                },
                "rate",
            ),
            (
                "bandwidth(0.5B/s)",
                "0.5B/s",
                K::BadRate {
                    text: "0.5B/s".into(),
                    reason: "below 1 byte per second".into(),
                },
                "rate",
            ),
            (
                "fail_first(three)",
                "three",
                K::BadCount {
                    text: "three".into(),
                },
                "fail_first(3)",
            ),
            (
                "fail_first(-1)",
                "-1",
                K::BadCount { text: "-1".into() },
                "fail_first(3)",
            ),
            ("fail_first(0)", "0", K::ZeroCount, "at least 1"),
            (
                "latency(200ms, spread 50ms)",
                "spread",
                K::UnknownOption {
                    name: "latency",
                    option: "spread".into(),
                },
                "jitter",
            ),
            (
                "latency(200ms, jitter 10ms, jitter 20ms)",
                "jitter 20ms",
                K::DuplicateOption { option: "jitter" },
                "once",
            ),
            (
                "latency(50ms, jitter 60ms)",
                "jitter 60ms",
                K::JitterExceedsLatency,
                "at most the latency",
            ),
            (
                "reset@sideways",
                "@sideways",
                K::BadDirection {
                    text: "@sideways".into(),
                },
                "@upstream",
            ),
            (
                "reset@",
                "@",
                K::BadDirection { text: "@".into() },
                "@downstream",
            ),
            (
                "down@upstream",
                "@upstream",
                K::DirectionNotApplicable { name: "down" },
                "remove the @direction",
            ),
            (
                "none@downstream",
                "@downstream",
                K::DirectionNotApplicable { name: "none" },
                "remove",
            ),
            (
                "reset@upstream@downstream",
                "@downstream",
                K::DuplicateDirection,
                "one direction",
            ),
            (
                "reset×half",
                "×half",
                K::BadToxicity {
                    text: "half".into(),
                },
                "probability",
            ),
            ("reset×", "×", K::BadToxicity { text: "".into() }, "(0, 1]"),
            (
                "reset×0",
                "×0",
                K::ToxicityOutOfRange { text: "0".into() },
                "(0, 1]",
            ),
            (
                "reset×1.5",
                "×1.5",
                K::ToxicityOutOfRange { text: "1.5".into() },
                "(0, 1]",
            ),
            (
                "reset*-0.5",
                "*-0.5",
                K::ToxicityOutOfRange {
                    text: "-0.5".into(),
                },
                "(0, 1]",
            ),
            (
                "down×0.5",
                "×0.5",
                K::ToxicityNotApplicable { name: "down" },
                "reset×0.5",
            ),
            (
                "downx0.5",
                "x0.5",
                K::ToxicityNotApplicable { name: "down" },
                "reset×0.5",
            ),
            (
                "fail_first(2)×0.5",
                "×0.5",
                K::ToxicityNotApplicable { name: "fail_first" },
                "exactly",
            ),
            (
                "none x0.5",
                "x0.5",
                K::ToxicityNotApplicable { name: "none" },
                "remove",
            ),
            ("reset×0.5×0.5", "×0.5", K::DuplicateToxicity, "once"),
            (
                "latency(200ms) extra",
                "extra",
                K::Trailing {
                    text: "extra".into(),
                },
                "@upstream",
            ),
            (
                "reset, down",
                ", down",
                K::Trailing {
                    text: ", down".into(),
                },
                "one of",
            ),
        ];
        let more: Vec<(&str, &str, K, &str)> = vec![
            (
                "kill(9)",
                "(9)",
                K::UnexpectedArguments { name: "kill" },
                "alone",
            ),
            (
                "pause@upstream",
                "@upstream",
                K::DirectionNotApplicable { name: "pause" },
                "remove the @direction",
            ),
            (
                "restart×0.5",
                "×0.5",
                K::ToxicityNotApplicable { name: "restart" },
                "process tree",
            ),
            (
                "status(503)x0.3",
                "x0.3",
                K::ToxicityNotApplicable { name: "status" },
                "status(503, ×0.3)",
            ),
            (
                "status",
                "status",
                K::MissingArguments { name: "status" },
                "status(503)",
            ),
            (
                "status(200)",
                "200",
                K::BadStatus { text: "200".into() },
                "status(503)",
            ),
            (
                "status(abc)",
                "abc",
                K::BadStatus { text: "abc".into() },
                "status(503)",
            ),
            (
                "status(503, ×1.5)",
                "×1.5",
                K::ToxicityOutOfRange { text: "1.5".into() },
                "(0, 1]",
            ),
            ("status(503, x0.3, x0.4)", "x0.4", K::DuplicateShare, "once"),
            (
                "status(503, retry_after 1s)",
                "retry_after",
                K::UnknownOption {
                    name: "status",
                    option: "retry_after".into(),
                },
                "status(503)",
            ),
            (
                "throttle(429, retry_after 500ms)",
                "500ms",
                K::NotWholeSeconds {
                    text: "500ms".into(),
                },
                "whole seconds",
            ),
            (
                "throttle(429, retry_after 1s, retry_after 2s)",
                "retry_after 2s",
                K::DuplicateOption {
                    option: "retry_after",
                },
                "once",
            ),
            (
                "http_delay(0ms)",
                "0ms",
                K::ZeroDuration { name: "http_delay" },
                "none",
            ),
            (
                "http_delay()",
                "",
                K::EmptyArgument { name: "http_delay" },
                "http_delay(200ms)",
            ),
            (
                "sigkill",
                "sigkill",
                K::UnknownName {
                    name: "sigkill".into(),
                    suggestion: Some("kill"),
                },
                "did you mean `kill`",
            ),
            (
                "freeze",
                "freeze",
                K::UnknownName {
                    name: "freeze".into(),
                    suggestion: Some("pause"),
                },
                "pause",
            ),
        ];
        for (input, covered, kind, help_word) in cases.into_iter().chain(more) {
            let e = match parse(input) {
                Ok(f) => panic!("{input:?} parsed as {f}"),
                Err(e) => e,
            };
            assert_eq!(e.kind, kind, "{input:?}");
            // The duplicate-toxicity span is the second one; find the last occurrence then.
            let got = &input[e.span.clone()];
            assert_eq!(got, covered, "{input:?}: span {:?}", e.span);
            assert!(
                e.help().contains(help_word),
                "{input:?}: help {:?} lacks {help_word:?}",
                e.help()
            );
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn default_directions_follow_the_documented_table() {
        use Direction::*;
        let acts = |text: &str| {
            let f = parse(text).unwrap();
            (
                f.acts_on(Upstream),
                f.acts_on(Downstream),
                f.resets_at_once(),
            )
        };
        assert_eq!(acts("latency(1ms)"), (false, true, false));
        assert_eq!(acts("latency(1ms)@upstream"), (true, false, false));
        assert_eq!(acts("bandwidth(1KiB/s)"), (false, true, false));
        assert_eq!(acts("slow_close(1s)"), (false, true, false));
        assert_eq!(acts("blackhole"), (true, true, false));
        assert_eq!(acts("blackhole@upstream"), (true, false, false));
        assert_eq!(acts("reset"), (false, false, true));
        assert_eq!(acts("reset@downstream"), (false, true, false));
        assert_eq!(acts("fail_first(1)"), (false, false, true));
        assert_eq!(acts("down"), (false, false, false));
        assert_eq!(acts("kill"), (false, false, false));
        assert_eq!(acts("pause"), (false, false, false));
        assert_eq!(acts("status(503, ×0.5)"), (false, false, false));
        assert_eq!(acts("http_delay(1ms)"), (false, false, false));
        assert!(parse("restart").unwrap().kind.is_process());
        assert!(parse("throttle(429)").unwrap().kind.is_http());
        assert!(!parse("down").unwrap().kind.is_process());
        assert_eq!(acts("none"), (false, false, false));
    }

    #[test]
    fn serde_uses_the_canonical_text() {
        let f = parse("latency(200ms, jitter=50ms)@upstream x0.5").unwrap();
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, "\"latency(200ms, jitter 50ms)@upstream×0.5\"");
        let back: Fault = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
        let bad = serde_json::from_str::<Fault>("\"latency\"").unwrap_err();
        assert!(bad.to_string().contains("needs an argument"), "{bad}");
    }

    #[test]
    fn duration_and_rate_text_round_trip() {
        for d in [
            Duration::from_nanos(1),
            Duration::from_nanos(1500),
            Duration::from_micros(999),
            Duration::from_millis(1),
            Duration::from_millis(1001),
            Duration::from_secs(3600),
        ] {
            assert_eq!(parse_duration(&DurationText(d).to_string()), Ok(d));
        }
        for r in [
            1u64,
            1000,
            1023,
            1024,
            1536,
            16384,
            1 << 20,
            3 << 30,
            5_000_000,
        ] {
            assert_eq!(parse_rate(&RateText(r).to_string()), Ok(r));
        }
    }
}
