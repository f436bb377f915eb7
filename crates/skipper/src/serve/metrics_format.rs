//! Which exposition format `/metrics` answers in, from the scraper's `Accept`, and the classic
//! Prometheus text format made from the OpenMetrics text `prometheus_client` writes.
//!
//! Prometheus asks for OpenMetrics only when told to; scrapers that do not ask for it (older
//! Prometheus, Telegraf, Datadog's check, `curl`) expect `text/plain; version=0.0.4`, where an
//! `# EOF` line, `# UNIT` lines or a counter's family named without `_total` are errors or
//! untyped series.

/// The two exposition formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Classic,
}

impl Format {
    pub const OPENMETRICS_TYPE: &'static str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    pub const CLASSIC_TYPE: &'static str = "text/plain; version=0.0.4; charset=utf-8";

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => Self::OPENMETRICS_TYPE,
            Format::Classic => Self::CLASSIC_TYPE,
        }
    }

    /// OpenMetrics when `Accept` ranks it at least as high as the classic format (a `q` of 0
    /// refuses it); the classic format otherwise, also without an `Accept` header.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else { return Format::Classic };
        let mut openmetrics: Option<f32> = None;
        let mut classic: Option<f32> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                .and_then(|(_, v)| v.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let slot = match media.as_str() {
                "application/openmetrics-text" => &mut openmetrics,
                "text/plain" | "text/*" | "*/*" => &mut classic,
                _ => continue,
            };
            // The most specific range wins in HTTP; here the highest weight of either kind does.
            *slot = Some(slot.map_or(q, |old| old.max(q)));
        }
        match openmetrics {
            Some(om) if om > 0.0 && om >= classic.unwrap_or(0.0) => Format::OpenMetrics,
            _ => Format::Classic,
        }
    }
}

/// The classic text format of an OpenMetrics exposition as `prometheus_client` writes it: no
/// `# UNIT` or `# EOF` lines, and a counter's `HELP` and `TYPE` name its `_total` series.
pub fn classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut counters = std::collections::HashSet::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, "counter")) = rest.split_once(' ') {
                counters.insert(name.to_string());
            }
        }
    }
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "].into_iter().find(|p| line.starts_with(p));
        match meta {
            Some(prefix) => {
                let rest = &line[prefix.len()..];
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(prefix);
                out.push_str(name);
                if counters.contains(name) && !name.ends_with("_total") {
                    out.push_str("_total");
                }
                if !tail.is_empty() {
                    out.push(' ');
                    out.push_str(tail);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_when_asked_for_at_least_as_much_as_the_classic_format() {
        assert_eq!(Format::negotiate(None), Format::Classic);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Classic);
        assert_eq!(Format::negotiate(Some("text/plain;version=0.0.4")), Format::Classic);
        // What Prometheus 2.x sends with OpenMetrics scraping on, and 3.x's default.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("application/openmetrics-text")), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")), Format::Classic);
        assert_eq!(Format::negotiate(Some("application/openmetrics-text;q=0")), Format::Classic);
        assert_eq!(Format::negotiate(Some("APPLICATION/OpenMetrics-Text ; q=0.2")), Format::OpenMetrics);
    }

    #[test]
    fn the_classic_format_names_counters_by_their_series_and_drops_what_it_lacks() {
        let om = "# HELP skipper_turns Turns run.\n# TYPE skipper_turns counter\nskipper_turns_total 3\n\
                  # HELP skipper_model_latency_seconds Latency.\n# TYPE skipper_model_latency_seconds histogram\n\
                  # UNIT skipper_model_latency_seconds seconds\nskipper_model_latency_seconds_sum 0.5\n\
                  skipper_model_latency_seconds_count 1\nskipper_model_latency_seconds_bucket{le=\"+Inf\"} 1\n\
                  # HELP skipper_sessions_active Sessions.\n# TYPE skipper_sessions_active gauge\n\
                  skipper_sessions_active 2\n# EOF\n";
        let text = classic(om);
        assert!(
            text.contains(
                "# HELP skipper_turns_total Turns run.\n# TYPE skipper_turns_total counter\nskipper_turns_total 3\n"
            ),
            "{text}"
        );
        assert!(text.contains("# TYPE skipper_model_latency_seconds histogram\n"), "{text}");
        assert!(text.contains("# TYPE skipper_sessions_active gauge\nskipper_sessions_active 2\n"), "{text}");
        assert!(!text.contains("# UNIT") && !text.contains("# EOF"), "{text}");
    }
}
