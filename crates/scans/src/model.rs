//! A scan's states, and how progress, coverage and the completeness score are computed from
//! its counts (docs/scans.md defines each).

use ids::{ConnectorId, ScanId};
use serde::Serialize;
use time::OffsetDateTime;

use crate::options::{Kind, Options, Strategy};

/// A scan's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Queued,
    Running,
    Completed,
    Partial,
    Failed,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Queued,
        Status::Running,
        Status::Completed,
        Status::Partial,
        Status::Failed,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Partial => "partial",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        !matches!(self, Status::Queued | Status::Running)
    }
}

/// How far enumeration got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enumeration {
    InProgress,
    Complete,
    Partial,
    Failed,
}

impl Enumeration {
    pub fn as_str(self) -> &'static str {
        match self {
            Enumeration::InProgress => "in_progress",
            Enumeration::Complete => "complete",
            Enumeration::Partial => "partial",
            Enumeration::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Enumeration> {
        [
            Enumeration::InProgress,
            Enumeration::Complete,
            Enumeration::Partial,
            Enumeration::Failed,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// Resource counts of a scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub enumerated: i64,
    pub scanned: i64,
    pub skipped: i64,
    pub failed: i64,
    pub findings: i64,
}

impl Counts {
    pub fn processed(&self) -> i64 {
        self.scanned + self.skipped + self.failed
    }

    /// Scanned resources over those eligible (enumerated and not excluded by policy). With
    /// none eligible it is 1.0 once the enumeration is complete (nothing was left unscanned),
    /// and 0.0 while it runs or where it failed or stopped short (nothing is known covered).
    pub fn coverage_pct(&self, enumeration: Enumeration) -> f64 {
        let eligible = self.enumerated - self.skipped;
        if eligible <= 0 {
            if enumeration == Enumeration::Complete {
                1.0
            } else {
                0.0
            }
        } else {
            self.scanned as f64 / eligible as f64
        }
    }
}

/// Why resources were skipped or failed: reason → count (docs/scans.md, "Per object"). Each
/// chunk keeps its own in this form (`scan_chunks.reasons`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reasons {
    #[serde(default)]
    pub skipped: std::collections::BTreeMap<String, i64>,
    #[serde(default)]
    pub failed: std::collections::BTreeMap<String, i64>,
    /// What scanned objects left unread inside them (members of archives), by reason: not
    /// resources, so in neither count above.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unread: std::collections::BTreeMap<String, i64>,
}

impl Reasons {
    pub fn is_empty(&self) -> bool {
        self.skipped.is_empty() && self.failed.is_empty() && self.unread.is_empty()
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Reasons) {
        for (mine, theirs) in [
            (&mut self.skipped, &other.skipped),
            (&mut self.failed, &other.failed),
            (&mut self.unread, &other.unread),
        ] {
            for (reason, n) in theirs {
                *mine.entry(reason.clone()).or_default() += n;
            }
        }
    }
}

/// Worker (chunk) counts of a scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerCounts {
    pub total: i64,
    pub active: i64,
    pub completed: i64,
    pub failed: i64,
}

/// A scan as the API shows it.
#[derive(Debug, Clone)]
pub struct Scan {
    pub id: ScanId,
    pub status: Status,
    pub kind: Kind,
    /// Started through POST /scans/parallel (true) or POST /connectors/:id/scan.
    pub parallel: bool,
    pub connectors: Vec<ConnectorId>,
    pub options: Options,
    pub enumeration: Enumeration,
    pub sources_total: i32,
    pub sources_listed: i32,
    pub status_reason: Option<String>,
    pub counts: Counts,
    pub reasons: Reasons,
    pub workers: WorkerCounts,
    pub created_at: OffsetDateTime,
    pub started_at: Option<OffsetDateTime>,
    pub completed_at: Option<OffsetDateTime>,
}

/// The spec's progress object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub files_total: i64,
    pub files_processed: i64,
    pub files_failed: i64,
    pub findings_count: i64,
    pub percent_complete: i64,
    pub elapsed_seconds: i64,
    /// The time left before the scan's `timeout_minutes` while no rate is known (enumerating,
    /// nothing processed yet); then the extrapolation, never past that timeout; 0 once ended.
    pub estimated_remaining_seconds: i64,
}

/// The spec's coverage object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coverage {
    pub coverage_target: f64,
    pub coverage_strategy: Strategy,
    pub coverage_pct: f64,
    pub target_met: bool,
    pub completeness_score: f64,
    pub enumeration_status: Enumeration,
    pub total_enumerated: i64,
    pub total_scanned: i64,
    pub total_skipped: i64,
    pub total_failed: i64,
}

impl Scan {
    pub fn progress(&self, now: OffsetDateTime) -> Progress {
        let c = &self.counts;
        let processed = c.processed();
        let end = self.completed_at.unwrap_or(now);
        let elapsed = self
            .started_at
            .map(|s| (end - s).whole_seconds().max(0))
            .unwrap_or(0);
        let percent = if self.status == Status::Completed {
            100
        } else if c.enumerated > 0 {
            (processed * 100 / c.enumerated).min(100)
        } else {
            0
        };
        // The scan ends by its timeout at the latest: an upper bound that always holds.
        let until_timeout = (i64::from(self.options.timeout_minutes) * 60 - elapsed).max(0);
        let remaining = if self.status.is_terminal() {
            0
        } else if self.enumeration == Enumeration::InProgress || processed == 0 {
            until_timeout
        } else {
            let left = (c.enumerated - processed).max(0);
            (((elapsed as f64 / processed as f64) * left as f64).ceil() as i64).min(until_timeout)
        };
        Progress {
            files_total: c.enumerated,
            files_processed: processed,
            files_failed: c.failed,
            findings_count: c.findings,
            percent_complete: percent,
            elapsed_seconds: elapsed,
            estimated_remaining_seconds: remaining,
        }
    }

    pub fn coverage(&self) -> Coverage {
        let c = &self.counts;
        let pct = c.coverage_pct(self.enumeration);
        Coverage {
            coverage_target: self.options.coverage_target,
            coverage_strategy: self.options.coverage_strategy,
            coverage_pct: round4(pct),
            target_met: meets(pct, self.options.coverage_target),
            completeness_score: round4(completeness(
                pct,
                self.enumeration,
                self.sources_total,
                self.sources_listed,
            )),
            enumeration_status: self.enumeration,
            total_enumerated: c.enumerated,
            total_scanned: c.scanned,
            total_skipped: c.skipped,
            total_failed: c.failed,
        }
    }
}

/// Four decimals, rounded down: a coverage shown as the target has met it (0.94996 is not
/// shown as 0.95 beside `target_met: false`).
fn round4(x: f64) -> f64 {
    (x * 10_000.0 + 1e-6).floor() / 10_000.0
}

/// Whether a coverage meets its target, judged on the coverage as shown (four decimals), as
/// the spec defines `target_met` ("coverage_pct >= coverage_target"): a target finer than
/// four decimals is never shown met by a coverage shown below it.
fn meets(coverage_pct: f64, target: f64) -> bool {
    round4(coverage_pct) + 1e-9 >= target
}

/// The completeness score: the coverage of what was enumerated, times the share of listing
/// sources (connector, bucket, prefix) that were listed to the end. A scan that saw every
/// object and scanned all it could scores 1.0; objects that failed, and sources that could
/// not be listed, each lower it in proportion.
pub fn completeness(
    coverage_pct: f64,
    enumeration: Enumeration,
    sources_total: i32,
    sources_listed: i32,
) -> f64 {
    let listed = match enumeration {
        Enumeration::Failed => 0.0,
        Enumeration::Complete => 1.0,
        Enumeration::InProgress | Enumeration::Partial => {
            if sources_total <= 0 {
                0.0
            } else {
                f64::from(sources_listed) / f64::from(sources_total)
            }
        }
    };
    (coverage_pct * listed).clamp(0.0, 1.0)
}

/// How a scan whose work is done ends (docs/scans.md, "Statuses").
pub fn final_status(
    strategy: Strategy,
    target: f64,
    counts: &Counts,
    enumeration: Enumeration,
    timed_out: bool,
) -> (Status, Option<String>) {
    if enumeration == Enumeration::Failed {
        return (Status::Failed, Some("enumeration failed".into()));
    }
    let pct = counts.coverage_pct(enumeration);
    let met = meets(pct, target);
    if strategy == Strategy::Strict && !met {
        return (
            Status::Failed,
            Some(format!(
                "coverage {:.4} is below the strict target {target}",
                pct
            )),
        );
    }
    if timed_out {
        return (Status::Partial, Some("timeout_minutes was exceeded".into()));
    }
    if enumeration == Enumeration::Partial {
        return (
            Status::Partial,
            Some("some buckets or prefixes could not be listed".into()),
        );
    }
    if !met {
        return (
            Status::Partial,
            Some(format!("coverage {pct:.4} is below the target {target}")),
        );
    }
    (Status::Completed, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remaining_time_is_always_an_integer_bounded_by_the_timeout() {
        let options = crate::options::validate(
            Some(&serde_json::json!({ "timeout_minutes": 10 })),
            crate::options::Tier::standard(),
        )
        .unwrap();
        let start = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        let mut scan = Scan {
            id: ScanId::new(),
            status: Status::Running,
            kind: Kind::Full,
            parallel: false,
            connectors: Vec::new(),
            options,
            enumeration: Enumeration::InProgress,
            sources_total: 1,
            sources_listed: 0,
            status_reason: None,
            counts: Counts::default(),
            reasons: Reasons::default(),
            workers: WorkerCounts::default(),
            created_at: start,
            started_at: Some(start),
            completed_at: None,
        };
        let at = |s: i64| start + time::Duration::seconds(s);
        // No rate yet: the time left before the timeout.
        assert_eq!(scan.progress(at(60)).estimated_remaining_seconds, 540);
        // A rate: 10 of 100 in 60 s leaves 540 s, within the bound.
        scan.enumeration = Enumeration::Complete;
        scan.counts.enumerated = 100;
        scan.counts.scanned = 10;
        assert_eq!(scan.progress(at(60)).estimated_remaining_seconds, 540);
        // A slow rate is capped by the timeout: 1 of 100 in 60 s would be 5,940 s.
        scan.counts.scanned = 1;
        assert_eq!(scan.progress(at(60)).estimated_remaining_seconds, 540);
        // Past the timeout, and once ended: 0.
        assert_eq!(scan.progress(at(700)).estimated_remaining_seconds, 0);
        scan.status = Status::Completed;
        assert_eq!(scan.progress(at(60)).estimated_remaining_seconds, 0);
    }

    #[test]
    fn coverage_leaves_out_what_policy_excluded() {
        let c = Counts {
            enumerated: 10,
            scanned: 6,
            skipped: 2,
            failed: 2,
            findings: 3,
        };
        assert!((c.coverage_pct(Enumeration::Complete) - 0.75).abs() < 1e-9);
        assert_eq!(Counts::default().coverage_pct(Enumeration::Complete), 1.0);
        // Nothing eligible yet: nothing is known covered until the listing is complete.
        for unfinished in [
            Enumeration::InProgress,
            Enumeration::Partial,
            Enumeration::Failed,
        ] {
            assert_eq!(Counts::default().coverage_pct(unfinished), 0.0);
        }
        assert_eq!(round4(0.94996), 0.9499);
        assert_eq!(round4(0.95), 0.95);
        assert_eq!(round4(2.0 / 3.0), 0.6666);
        assert_eq!(round4(1.0), 1.0);
        // target_met follows the coverage as shown.
        assert!(meets(0.95, 0.95) && meets(1.0, 1.0) && meets(2.0 / 3.0, 0.6666));
        assert!(!meets(0.94996, 0.95));
        assert!(!meets(2.0 / 3.0, 0.66666), "shown 0.6666, below 0.66666");
        assert!((completeness(0.75, Enumeration::Partial, 4, 3) - 0.5625).abs() < 1e-9);
        assert_eq!(completeness(1.0, Enumeration::Failed, 1, 0), 0.0);
    }

    #[test]
    fn how_a_scan_ends() {
        let all = Counts {
            enumerated: 4,
            scanned: 4,
            ..Counts::default()
        };
        let some = Counts {
            enumerated: 4,
            scanned: 3,
            failed: 1,
            ..Counts::default()
        };
        let best = Strategy::BestEffort;
        let strict = Strategy::Strict;
        let e = Enumeration::Complete;
        assert_eq!(
            final_status(best, 0.95, &all, e, false).0,
            Status::Completed
        );
        assert_eq!(final_status(best, 0.95, &some, e, false).0, Status::Partial);
        assert_eq!(
            final_status(best, 0.7, &some, e, false).0,
            Status::Completed
        );
        assert_eq!(
            final_status(strict, 0.95, &some, e, false).0,
            Status::Failed
        );
        assert_eq!(final_status(best, 0.5, &all, e, true).0, Status::Partial);
        // Timed out: strict and short of the target fails; strict and at it is partial.
        assert_eq!(final_status(strict, 0.95, &some, e, true).0, Status::Failed);
        assert_eq!(final_status(strict, 0.5, &all, e, true).0, Status::Partial);
        // Still listing when the time ran out, nothing scanned: nothing is known covered.
        assert_eq!(
            final_status(
                strict,
                0.5,
                &Counts::default(),
                Enumeration::InProgress,
                true
            )
            .0,
            Status::Failed
        );
        assert_eq!(
            final_status(best, 0.5, &all, Enumeration::Partial, false).0,
            Status::Partial
        );
        assert_eq!(
            final_status(best, 0.5, &all, Enumeration::Failed, false).0,
            Status::Failed
        );
    }
}
