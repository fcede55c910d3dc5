//! Reading test counts from a JUnit XML report (the `[functional] junit` file): the sums over every
//! `<testsuite>`, or the `<testsuites>` totals when no suite carries counts.

use std::path::Path;

use qualify_evidence::JunitCounts;
use quick_xml::Reader;
use quick_xml::events::Event;

use crate::error::Error;

/// Read the report named `path` from where the check left it (`at`: its copy in the check's
/// private layer, or `path` itself) and sum its counts. Errors name the file and what was wrong.
pub fn read_as(path: &Path, at: &Path) -> Result<JunitCounts, Error> {
    let text = std::fs::read_to_string(at).map_err(|e| {
        Error::unreadable(
            "the JUnit report",
            path,
            &e,
            "check [functional] junit (relative to the workdir) and that the test command writes it",
        )
    })?;
    parse(&text).map_err(|e| Error::input_only(format!("{}: {e}", path.display())))
}

/// Why a text is not a JUnit report.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error("not a valid JUnit XML report at byte {position}: {message}")]
    Xml { position: u64, message: String },
    #[error("no <testsuite> or <testsuites> element: not a JUnit report")]
    NoSuite,
}

pub fn parse(text: &str) -> Result<JunitCounts, JunitError> {
    let mut reader = Reader::from_str(text);
    let mut suites = JunitCounts {
        tests: 0,
        failures: 0,
        errors: 0,
        skipped: 0,
    };
    let mut totals: Option<JunitCounts> = None;
    let mut saw_suite = false;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let name = e.name();
                let tag = name.as_ref();
                if tag != b"testsuite" && tag != b"testsuites" {
                    continue;
                }
                let mut c = JunitCounts {
                    tests: 0,
                    failures: 0,
                    errors: 0,
                    skipped: 0,
                };
                for attr in e.attributes().flatten() {
                    let value = String::from_utf8_lossy(&attr.value);
                    let n: u64 = value.trim().parse().unwrap_or(0);
                    match attr.key.as_ref() {
                        b"tests" => c.tests = n,
                        b"failures" => c.failures = n,
                        b"errors" => c.errors = n,
                        b"skipped" | b"disabled" => c.skipped += n,
                        _ => {}
                    }
                }
                if tag == b"testsuite" {
                    saw_suite = true;
                    suites.tests += c.tests;
                    suites.failures += c.failures;
                    suites.errors += c.errors;
                    suites.skipped += c.skipped;
                } else {
                    totals = Some(c);
                }
            }
            Ok(Event::Eof) => break,
            Err(e) => {
                return Err(JunitError::Xml {
                    position: reader.error_position(),
                    message: e.to_string(),
                });
            }
            _ => {}
        }
    }
    match (saw_suite, totals) {
        (true, _) => Ok(suites),
        (false, Some(t)) => Ok(t),
        (false, None) => Err(JunitError::NoSuite),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_suites() {
        let xml = r#"<?xml version="1.0"?>
<testsuites tests="9">
  <testsuite name="a" tests="3" failures="1" errors="0" skipped="1"><testcase name="x"/></testsuite>
  <testsuite name="b" tests="4" failures="0" errors="2"/>
</testsuites>"#;
        let c = parse(xml).unwrap();
        assert_eq!((c.tests, c.failures, c.errors, c.skipped), (7, 1, 2, 1));
    }

    #[test]
    fn rejects_what_is_not_junit() {
        assert!(parse("<html></html>").is_err());
        assert!(parse("<testsuite tests=\"1\"").is_err());
    }
}
