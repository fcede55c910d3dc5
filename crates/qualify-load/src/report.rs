//! The histograms behind a [`LoadReport`] (the vocabulary's, `qualify_model::load`, re-exported
//! here): HdrHistogram V2 deflate, base64 encoding and decoding, and latency summaries of a
//! histogram in seconds.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};

pub use qualify_model::load::{
    ErrorClass, ErrorCounts, Generator, HISTOGRAM_ENCODING, HISTOGRAM_UNIT, Latency,
    LatencySummary, LoadReport, ModelKind, PhaseReport, ScheduleLag, TimelineSecond, Writes,
};

/// The summary of a histogram of microseconds, in seconds.
pub fn summary_of(h: &Histogram<u64>) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary::default();
    }
    let s = |us: u64| Some(us as f64 / 1e6);
    LatencySummary {
        count: h.len(),
        p50: s(h.value_at_quantile(0.5)),
        p90: s(h.value_at_quantile(0.9)),
        p99: s(h.value_at_quantile(0.99)),
        p999: s(h.value_at_quantile(0.999)),
        max: s(h.max()),
        mean: Some(h.mean() / 1e6),
    }
}

/// A report's corrected histogram, decoded (values in microseconds).
pub fn corrected_histogram(report: &LoadReport) -> Result<Histogram<u64>, HistogramError> {
    decode_histogram(&report.latency.corrected_histogram)
}

/// A histogram as HdrHistogram V2 deflate, base64 (the HdrHistogram log format's encoding).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        // Serializing into memory fails only for histograms the crate cannot encode; the
        // report then carries no histogram rather than a broken one.
        Err(_) => String::new(),
    }
}

/// The inverse of [`encode_histogram`] (also reads plain V2).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(HistogramError::NotBase64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HistogramError::NotV2)
}

/// Why a report's histogram text does not decode (a receipt edited or cut short).
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("histogram is not base64: {0}")]
    NotBase64(base64::DecodeError),
    #[error("histogram is not HdrHistogram V2: {0:?}")]
    NotV2(hdrhistogram::serialization::DeserializeError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip_through_base64_v2() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for v in [45, 50, 51, 52, 70, 1_000_000, 2_500_000] {
            h.record(v).unwrap();
        }
        let text = encode_histogram(&h);
        assert!(!text.is_empty());
        let back = decode_histogram(&text).unwrap();
        assert_eq!(back.len(), 7);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
        assert_eq!(back, h);
        assert!(
            decode_histogram("not base64!")
                .unwrap_err()
                .to_string()
                .contains("base64")
        );
        assert!(
            decode_histogram("AAAA")
                .unwrap_err()
                .to_string()
                .contains("V2")
        );
    }

    #[test]
    fn summaries_are_in_seconds() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        assert_eq!(summary_of(&h), LatencySummary::default());
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = summary_of(&h);
        assert_eq!(s.count, 1000);
        let p50 = s.p50.unwrap();
        assert!((p50 - 0.5).abs() < 0.001, "{p50}");
        assert!((s.max.unwrap() - 1.0).abs() < 0.001);
        assert_eq!(s.at(0.99), s.p99);
        assert_eq!(s.at(1.0), s.max);
    }

    #[test]
    fn error_counts_describe_most_frequent_first() {
        let mut e = ErrorCounts::default();
        e.add(ErrorClass::Refused);
        for _ in 0..3 {
            e.add(ErrorClass::Timeout);
        }
        assert_eq!(e.total(), 4);
        assert_eq!(e.describe(), "timeout 3, refused 1");
        assert!(ErrorClass::Status429.is_answer() && !ErrorClass::Reset.is_answer());
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use std::collections::BTreeMap;

    use super::*;

    /// An open-model report at 100/s for 10 s: 1000 sent, 990 answered (980 ok, 10 5xx),
    /// 10 timeouts, 5 dropped; corrected p50 10 ms, p90 20 ms, p99 150 ms, p999 400 ms,
    /// max 900 ms.
    pub fn report() -> LoadReport {
        let corrected = LatencySummary {
            count: 990,
            p50: Some(0.010),
            p90: Some(0.020),
            p99: Some(0.150),
            p999: Some(0.400),
            max: Some(0.900),
            mean: Some(0.015),
        };
        LoadReport {
            model: ModelKind::Open,
            offered_rate: Some(100.0),
            users: None,
            duration_seconds: 10.0,
            measured_seconds: 10.0,
            warmup_seconds: 0.0,
            sent: 1000,
            completed: 990,
            succeeded: 980,
            dropped: 5,
            shed: 0,
            achieved_rate: 99.0,
            throughput: 98.0,
            errors: ErrorCounts {
                status_5xx: 10,
                timeout: 10,
                ..ErrorCounts::default()
            },
            error_examples: BTreeMap::new(),
            latency: Latency {
                corrected,
                uncorrected: corrected,
                censored: Some(10),
                corrected_histogram: String::new(),
                histogram_encoding: HISTOGRAM_ENCODING.to_string(),
                histogram_unit: HISTOGRAM_UNIT.to_string(),
            },
            timeline: Vec::new(),
            phases: Vec::new(),
            writes: None,
            generator: Generator {
                threads: 1,
                cpu_seconds: 0.5,
                wall_seconds: 10.0,
                saturated: false,
                detail: None,
                schedule_lag: ScheduleLag::default(),
                connections_opened: 8,
            },
            cancelled: false,
            stopped_at_seconds: None,
            generators: Vec::new(),
            shape: None,
        }
    }
}
