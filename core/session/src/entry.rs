//! The on-disk entry format, and the ids and timestamps entries carry.
//!
//! Each line is `{"id", "parent_id", "type", "time", ...}` where the remaining fields
//! depend on `type`. Times and ids are made here by hand so the crate needs neither a
//! calendar nor a random-number dependency.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use larik_protocol::{Message, Usage};
use serde::{Deserialize, Serialize};

/// What a session was started with; the first entry of every session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The absolute working directory the session belongs to.
    pub cwd: PathBuf,
    /// The provider the session started with, e.g. `anthropic`.
    pub provider: String,
    /// The model the session started with, without the provider.
    pub model: String,
    /// For a fork, the id of the session it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_of: Option<String>,
    /// For a fork, how many of the source's messages it kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_at: Option<usize>,
}

/// The meta entry's payload: the meta plus the version of Larik that wrote the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MetaRecord {
    #[serde(flatten)]
    pub meta: SessionMeta,
    #[serde(default)]
    pub version: String,
}

/// One line of a session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub id: String,
    pub parent_id: Option<String>,
    pub time: String,
    #[serde(flatten)]
    pub body: EntryBody,
}

/// The part of an entry that depends on its `type`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum EntryBody {
    Meta {
        meta: MetaRecord,
    },
    Message {
        message: Message,
    },
    Usage {
        usage: Usage,
        model: String,
    },
    Compaction {
        summary: String,
    },
    /// The end of a turn (or of a `/compact`): why it stopped, how many model requests it
    /// made and what they used together; each request's own usage is in the `usage`
    /// entries before it.
    Turn {
        stop_reason: String,
        requests: u32,
        usage: Usage,
    },
    /// Something the model must hear with the next prompt (e.g. which files `/undo` put
    /// back); delivered as part of that prompt's message.
    Note {
        text: String,
    },
    /// `/clear`: the model's context starts afresh here. What came before stays in the file
    /// (and in replays) as history; the model is sent none of it.
    Clear,
}

/// The entry types this version reads, to tell an unknown type from a malformed entry.
pub(crate) const KNOWN_TYPES: [&str; 7] = [
    "meta",
    "message",
    "usage",
    "compaction",
    "note",
    "turn",
    "clear",
];

/// `n` random lowercase hex digits.
///
/// Each `RandomState` is seeded differently, and mixing in the clock and a counter keeps
/// ids distinct even if two states were to collide.
pub(crate) fn random_hex(n: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = String::with_capacity(n);
    while out.len() < n {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        hasher.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out.truncate(n);
    out
}

/// A new session id: `YYYYMMDD-HHMMSS-xxxxxx`, UTC time and six random hex digits.
pub(crate) fn new_session_id(now: SystemTime) -> String {
    let t = UtcTime::from(now);
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        t.year,
        t.month,
        t.day,
        t.hour,
        t.minute,
        t.second,
        random_hex(6)
    )
}

/// An RFC 3339 UTC timestamp with milliseconds, e.g. `2025-01-31T23:59:59.123Z`.
pub fn rfc3339(now: SystemTime) -> String {
    let t = UtcTime::from(now);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}

/// The UTC calendar date, e.g. `2025-01-31`.
pub fn utc_date(now: SystemTime) -> String {
    let t = UtcTime::from(now);
    format!("{:04}-{:02}-{:02}", t.year, t.month, t.day)
}

/// A UTC calendar time, broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UtcTime {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
}

impl From<SystemTime> for UtcTime {
    fn from(time: SystemTime) -> Self {
        // Times before 1970 only occur with a broken clock; clamping keeps ids well-formed.
        let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since_epoch.as_secs();
        let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
        let of_day = secs % 86_400;
        let (year, month, day) = civil_from_days(days);
        UtcTime {
            year,
            month,
            day,
            hour: (of_day / 3600) as u32,
            minute: (of_day / 60 % 60) as u32,
            second: (of_day % 60) as u32,
            millis: since_epoch.subsec_millis(),
        }
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01.
///
/// Works in 400-year eras (146 097 days each) counted from 0000-03-01, so that the leap
/// day falls at the end of the counted year and month lengths follow a simple formula.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    const DAYS_PER_ERA: i64 = 146_097;
    // 719 468 days separate 0000-03-01 from 1970-01-01.
    let shifted = days + 719_468;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted.rem_euclid(DAYS_PER_ERA);
    // Subtract the leap days so far in the era (every 4 years, not every 100, but every 400).
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months counted from March: 31,30,31,30,31 repeat, which 153/5 days per month captures.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * march_month + 2) / 5 + 1) as u32;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn calendar_conversion_matches_known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 2000 is a leap year (divisible by 400), 2100 is not.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        assert_eq!(civil_from_days(19_722), (2023, 12, 31));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
    }

    #[test]
    fn dates_are_calendar_days_in_utc() {
        assert_eq!(utc_date(at(0)), "1970-01-01");
        assert_eq!(utc_date(at(951_782_400)), "2000-02-29");
    }

    #[test]
    fn timestamps_and_ids_have_the_documented_shape() {
        // 2024-02-29T13:45:07Z
        let time = at(1_709_214_307) + Duration::from_millis(42);
        assert_eq!(rfc3339(time), "2024-02-29T13:45:07.042Z");
        let id = new_session_id(time);
        assert!(id.starts_with("20240229-134507-"), "{id}");
        let suffix = &id["20240229-134507-".len()..];
        assert_eq!(suffix.len(), 6);
        assert!(
            suffix
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }

    #[test]
    fn random_hex_differs_between_calls() {
        let ids: std::collections::HashSet<String> = (0..200).map(|_| random_hex(8)).collect();
        assert_eq!(ids.len(), 200);
        assert!(ids.iter().all(|id| id.len() == 8));
    }
}
