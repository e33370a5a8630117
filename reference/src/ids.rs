//! Entry ids, session ids and the clock, injectable so tests and goldens are deterministic (000 "Entry base"; clause format.7).
//!
//! Entry ids are 8 lowercase hex digits, checked against the ids already in the
//! session; after 100 collisions a longer id is used, as the real code does.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of random-looking hex digits, for ids.
pub trait IdSource {
    /// Returns the next 64 random bits.
    fn next_u64(&mut self) -> u64;
}

/// Ids from the operating system's per-process random hash keys and a counter.
#[derive(Debug)]
pub struct RandomIds {
    state: u64,
}

impl Default for RandomIds {
    fn default() -> Self {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        RandomIds {
            state: hasher.finish() | 1,
        }
    }
}

impl IdSource for RandomIds {
    fn next_u64(&mut self) -> u64 {
        // splitmix64: a small, well-mixed generator.
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Deterministic ids `00000001`, `00000002`, … for tests and goldens.
#[derive(Debug, Default)]
pub struct SequentialIds {
    next: u64,
}

impl IdSource for SequentialIds {
    fn next_u64(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

/// Generates an 8-hex entry id that `taken` does not already hold (100 attempts, then a 36-char id).
/// Clauses: format.7, format.8.
pub fn new_entry_id(source: &mut dyn IdSource, taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = format!("{:08x}", source.next_u64() & 0xffff_ffff);
        if !taken(&id) {
            return id;
        }
    }
    uuid(source, 0)
}

/// A UUID: version 7 (the time in its first 48 bits) when `now_ms` is positive, else version 4.
/// Clauses: format.3.
pub fn uuid(source: &mut dyn IdSource, now_ms: i64) -> String {
    let (a, b) = (source.next_u64(), source.next_u64());
    let time = u64::try_from(now_ms).unwrap_or(0) & 0xffff_ffff_ffff;
    let hi = if now_ms > 0 {
        (time << 16) | 0x7000 | (a & 0x0fff)
    } else {
        (a & 0xffff_ffff_ffff_0fff) | 0x4000
    };
    let lo = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// The time source, injectable for deterministic output.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock stuck at one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now_ms(&self) -> i64 {
        self.0
    }
}

/// Formats milliseconds since the epoch as JavaScript's `toISOString()` does: `2026-02-16T10:20:30.000Z`.
pub fn iso_timestamp(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    // Years outside 0..=9999 take a sign and six digits.
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else {
        format!("{y:+07}")
    };
    format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// A timestamp as it appears in session file names: `:` and `.` replaced by `-`.
pub fn file_timestamp(ms: i64) -> String {
    iso_timestamp(ms).replace([':', '.'], "-")
}

/// Parses a time as JavaScript's `Date.parse` does for ECMAScript's date-time string
/// format (ECMA-262 "Date Time String Format"): `YYYY`, `YYYY-MM` or `YYYY-MM-DD` (or a
/// signed six-digit year, `+YYYYYY`), optionally followed by `THH:mm`, `:ss`, `.fraction`
/// (the first three digits count), and `Z` or `±HH:mm`. `T24:00` is the next midnight.
/// A date-time without a zone is read as UTC here (JavaScript reads it as local time; the
/// kit runs in UTC). As V8 and JavaScriptCore do, a day up to 31 past its month's end
/// rolls into the next month (`2025-02-29` is 1 March). Other strings, which the engines
/// hand to their legacy parsers (`2025-6-1`, `June 1`), are NaN here: `None`.
/// Clauses: tree.16.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let mut p = Cursor {
        text: text.as_bytes(),
        at: 0,
    };
    let year = if p.eat(b'+') {
        p.number(6)?
    } else if p.eat(b'-') {
        // `-000000` is not a year.
        Some(-p.number(6)?).filter(|&year| year != 0)?
    } else {
        p.number(4)?
    };
    let (mut month, mut day) = (1, 1);
    if p.eat(b'-') {
        month = p.number(2)?;
        if p.eat(b'-') {
            day = p.number(2)?;
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    if p.eat(b'T') {
        ms += p.time_of_day()?;
        ms -= p.zone_offset()?;
    }
    // `Date` holds ±8.64e15 ms; beyond is NaN.
    (p.at == p.text.len() && ms.abs() <= 8_640_000_000_000_000).then_some(ms)
}

/// A position in the text [`parse_iso_ms`] reads.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// Steps over `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.text.get(self.at) == Some(&byte);
        self.at += usize::from(next);
        next
    }

    /// Steps over a `+` (1) or `-` (-1).
    fn sign(&mut self) -> Option<i64> {
        if self.eat(b'+') {
            Some(1)
        } else if self.eat(b'-') {
            Some(-1)
        } else {
            None
        }
    }

    /// Exactly `n` ASCII digits, as a number.
    fn number(&mut self, n: usize) -> Option<i64> {
        let digits = self.text.get(self.at..self.at + n)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.at += n;
        Some(digits.iter().fold(0, |v, &d| v * 10 + i64::from(d - b'0')))
    }

    /// `HH:mm`, then optionally `:ss` and `.fraction`, as milliseconds into the day.
    fn time_of_day(&mut self) -> Option<i64> {
        let hour = self.number(2)?;
        let minute = self.eat(b':').then(|| self.number(2)).flatten()?;
        let (mut second, mut millis) = (0, 0);
        if self.eat(b':') {
            second = self.number(2)?;
            if self.eat(b'.') {
                millis = self.fraction()?;
            }
        }
        let valid = (hour < 24 && minute < 60 && second < 60)
            || (hour == 24 && (minute, second, millis) == (0, 0, 0));
        valid.then_some(((hour * 60 + minute) * 60 + second) * 1000 + millis)
    }

    /// One or more digits, as milliseconds (`.5` is 500, `.1234` is 123).
    fn fraction(&mut self) -> Option<i64> {
        let start = self.at;
        while self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = self.text.get(start..self.at).filter(|d| !d.is_empty())?;
        Some(
            digits
                .iter()
                .chain(std::iter::repeat(&b'0'))
                .take(3)
                .fold(0, |ms, &d| ms * 10 + i64::from(d - b'0')),
        )
    }

    /// `Z`, `±HH:mm` or nothing (UTC), as milliseconds ahead of UTC.
    fn zone_offset(&mut self) -> Option<i64> {
        if self.eat(b'Z') {
            return Some(0);
        }
        let Some(sign) = self.sign() else {
            return Some(0);
        };
        let hours = self.number(2)?;
        let minutes = self.eat(b':').then(|| self.number(2)).flatten()?;
        (hours < 24 && minutes < 60).then_some(sign * (hours * 60 + minutes) * 60_000)
    }
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_are_8_hex_and_avoid_collisions() {
        let mut ids = SequentialIds::default();
        let id = new_entry_id(&mut ids, |id| id == "00000001");
        assert_eq!(id, "00000002");
        let mut random = RandomIds::default();
        let id = new_entry_id(&mut random, |_| false);
        assert!(
            id.len() == 8
                && id
                    .bytes()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(new_entry_id(&mut random, |_| true).len(), 36);
    }

    #[test]
    fn iso_round_trips() {
        for ms in [0, 1_748_779_200_000, 1_771_237_440_000, 951_782_400_000] {
            assert_eq!(parse_iso_ms(&iso_timestamp(ms)), Some(ms));
        }
        assert_eq!(iso_timestamp(1_748_779_200_000), "2025-06-01T12:00:00.000Z");
        assert_eq!(file_timestamp(0), "1970-01-01T00-00-00-000Z");
        // As `toISOString()` writes years outside 0..=9999.
        for (ms, iso) in [
            (-62_198_755_200_000, "-000001-01-01T00:00:00.000Z"),
            (8_640_000_000_000_000, "+275760-09-13T00:00:00.000Z"),
            (-62_167_219_200_000, "0000-01-01T00:00:00.000Z"),
        ] {
            assert_eq!(iso_timestamp(ms), iso);
        }
    }

    /// `Date.parse` of each string, as Node 20.20.2 and Bun 1.4.4 (`TZ=UTC`) both give it.
    #[test]
    fn iso_parsing_matches_date_parse() {
        let cases = [
            ("2025-06-01T12:00:00.000Z", Some(1_748_779_200_000)),
            ("2025-06-01T13:00:00+01:00", Some(1_748_779_200_000)),
            ("2025-06-01", Some(1_748_736_000_000)),
            ("2025-06-01T12:00Z", Some(1_748_779_200_000)),
            ("2025-06-01T12:00:00.5Z", Some(1_748_779_200_500)),
            ("2025-06-01T12:00:00.25Z", Some(1_748_779_200_250)),
            ("2025-06-01T12:00:00.1239Z", Some(1_748_779_200_123)),
            ("2025-06-01T12:00:00.Z", None),
            ("garbage", None),
            ("", None),
            ("2025", Some(1_735_689_600_000)),
            ("2025-06", Some(1_748_736_000_000)),
            ("+002025-06-01", Some(1_748_736_000_000)),
            ("-000001-01-01T00:00:00Z", Some(-62_198_755_200_000)),
            ("-000000-01-01T00:00:00Z", None),
            ("2025-02-29", Some(1_740_787_200_000)),
            ("2024-02-29", Some(1_709_164_800_000)),
            ("2025-02-31T10:00:00.000Z", Some(1_740_996_000_000)),
            ("2025-04-31", Some(1_746_057_600_000)),
            ("2025-01-32", None),
            ("2025-13-01", None),
            ("2025-00-01", None),
            ("2025-06-00", None),
            ("2025x06-01T00:00:00Z", None),
            ("2025-06x01T00:00:00Z", None),
            ("2025-06-01X12:00:00Z", None),
            ("2025-06-01T12", None),
            ("2025-06-01T12:00", Some(1_748_779_200_000)),
            ("2025-06-01T12x00:00Z", None),
            ("2025-06-01T12:00:00.123", Some(1_748_779_200_123)),
            ("2025-06-01T24:00:00Z", Some(1_748_822_400_000)),
            ("2025-06-01T24:00:00.001Z", None),
            ("2025-06-01T23:60:00Z", None),
            ("2025-06-01T23:59:60Z", None),
            ("2025-06-01T25:00Z", None),
            ("2025-06-01T12:00:00-01:30", Some(1_748_784_600_000)),
            ("2025-06-01T12:00:00+23:59", Some(1_748_692_860_000)),
            ("2025-06-01T12:00:00+24:00", None),
            ("2025-06-01T12:00:00+01:60", None),
            ("2025-06-01T12:00:00+01", None),
            ("2025-06T12:00Z", Some(1_748_779_200_000)),
            ("2025T12:00Z", Some(1_735_732_800_000)),
            ("+275760-09-13T00:00:00.000Z", Some(8_640_000_000_000_000)),
            ("+275760-09-13T00:00:00.001Z", None),
            ("-271821-04-20T00:00:00Z", Some(-8_640_000_000_000_000)),
            ("-271821-04-19T23:59:59.999Z", None),
            ("2025-06-01T12:00:00.123Zx", None),
            ("1900-02-29", Some(-2_203_891_200_000)),
            ("2000-02-29", Some(951_782_400_000)),
            ("2025-06-01T", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_iso_ms(text), expected, "{text}");
        }
    }

    #[test]
    fn uuids_carry_their_version() {
        let mut ids = SequentialIds::default();
        let v7 = uuid(&mut ids, 1_748_779_200_000);
        assert_eq!(v7.len(), 36);
        assert_eq!(&v7[14..15], "7");
        assert_eq!(&uuid(&mut ids, 0)[14..15], "4");
    }
}
