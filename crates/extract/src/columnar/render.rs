//! A Parquet column's values as text, the way a CSV export of the table would write them, and
//! the column's names as a person reads them.

use std::fmt::Write;

use parquet::basic::{ConvertedType, LogicalType, TimeUnit, Type as Physical};
use parquet::schema::types::{ColumnDescriptor, Type};

/// How one column's values are written as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Render {
    /// Strings, enums and JSON: UTF-8, with invalid bytes replaced.
    Text,
    /// Bytes without an annotation: text when they are UTF-8, else nothing (a blob).
    MaybeText,
    Signed,
    /// An unsigned integer stored in a signed physical type of `bits`.
    Unsigned {
        bits: u32,
    },
    Decimal {
        scale: i32,
    },
    /// Days since 1970-01-01.
    Date,
    /// A timestamp in units of `per_second`.
    Timestamp {
        per_second: i64,
    },
    Float,
}

impl Render {
    /// How `column` is rendered, or `None` for what holds no text a person reads: booleans,
    /// times of day, INT96 timestamps, UUIDs, half floats, BSON and geometries.
    pub(super) fn of(column: &ColumnDescriptor) -> Option<Self> {
        let physical = column.physical_type();
        if let Some(logical) = column.logical_type_ref() {
            return match logical {
                LogicalType::String | LogicalType::Enum | LogicalType::Json => Some(Render::Text),
                LogicalType::Decimal(d) => Some(Render::Decimal { scale: d.scale }),
                LogicalType::Date => Some(Render::Date),
                LogicalType::Timestamp(t) => Some(Render::Timestamp {
                    per_second: match t.unit {
                        TimeUnit::MILLIS => 1_000,
                        TimeUnit::MICROS => 1_000_000,
                        TimeUnit::NANOS => 1_000_000_000,
                    },
                }),
                LogicalType::Integer(i) if !i.is_signed => Some(Render::Unsigned {
                    bits: if physical == Physical::INT64 { 64 } else { 32 },
                }),
                LogicalType::Integer(_) => Some(Render::Signed),
                LogicalType::Time(_)
                | LogicalType::Uuid
                | LogicalType::Float16
                | LogicalType::Bson
                | LogicalType::Variant(_)
                | LogicalType::Geometry(_)
                | LogicalType::Geography(_) => None,
                _ => Self::physical(physical),
            };
        }
        match column.converted_type() {
            ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON => Some(Render::Text),
            ConvertedType::DECIMAL => Some(Render::Decimal {
                scale: column.type_scale(),
            }),
            ConvertedType::DATE => Some(Render::Date),
            ConvertedType::TIMESTAMP_MILLIS => Some(Render::Timestamp { per_second: 1_000 }),
            ConvertedType::TIMESTAMP_MICROS => Some(Render::Timestamp {
                per_second: 1_000_000,
            }),
            ConvertedType::UINT_8 | ConvertedType::UINT_16 | ConvertedType::UINT_32 => {
                Some(Render::Unsigned { bits: 32 })
            }
            ConvertedType::UINT_64 => Some(Render::Unsigned { bits: 64 }),
            ConvertedType::TIME_MILLIS | ConvertedType::TIME_MICROS | ConvertedType::BSON => None,
            _ => Self::physical(physical),
        }
    }

    fn physical(physical: Physical) -> Option<Self> {
        match physical {
            Physical::INT32 | Physical::INT64 => Some(Render::Signed),
            Physical::FLOAT | Physical::DOUBLE => Some(Render::Float),
            Physical::BYTE_ARRAY | Physical::FIXED_LEN_BYTE_ARRAY => Some(Render::MaybeText),
            Physical::BOOLEAN | Physical::INT96 => None,
        }
    }

    /// An INT32 or INT64 value.
    pub(super) fn int(self, v: i64, text: &mut String) {
        match self {
            Render::Unsigned { bits: 32 } => write_display(text, v as u32),
            Render::Unsigned { .. } => write_display(text, v as u64),
            Render::Decimal { scale } => decimal(i128::from(v), scale, text),
            Render::Date => date(v, text),
            Render::Timestamp { per_second } => timestamp(v, per_second, text),
            _ => write_display(text, v),
        }
    }

    pub(super) fn float(self, v: f64, text: &mut String) {
        if v.is_finite() {
            write_display(text, v);
        }
    }

    /// A BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value.
    pub(super) fn bytes(self, v: &[u8], text: &mut String) {
        match self {
            Render::Text => text.push_str(&String::from_utf8_lossy(v)),
            Render::Decimal { scale } => {
                if let Some(unscaled) = big_endian(v) {
                    decimal(unscaled, scale, text);
                }
            }
            _ => {
                if let Ok(s) = std::str::from_utf8(v) {
                    text.push_str(s);
                }
            }
        }
    }
}

fn write_display(text: &mut String, v: impl std::fmt::Display) {
    // Writing to a String cannot fail.
    let _ = write!(text, "{v}");
}

/// A two's-complement big-endian integer of at most 16 bytes.
fn big_endian(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0x00 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(full))
}

/// `unscaled` × 10^-`scale`, as `-1234.50`.
fn decimal(unscaled: i128, scale: i32, text: &mut String) {
    if !(0..=38).contains(&scale) {
        return;
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    if unscaled < 0 {
        text.push('-');
    }
    if scale == 0 {
        text.push_str(&digits);
        return;
    }
    let whole = digits.len().saturating_sub(scale);
    text.push_str(if whole == 0 { "0" } else { &digits[..whole] });
    text.push('.');
    for _ in digits.len()..scale {
        text.push('0');
    }
    text.push_str(&digits[whole..]);
}

/// Days since 1970-01-01 as `YYYY-MM-DD` (Howard Hinnant's civil-from-days), for years 0 to
/// 9999; other values are no date a person wrote.
pub(crate) fn date(days: i64, text: &mut String) {
    if let Some((y, m, d)) = civil(days) {
        let _ = write!(text, "{y:04}-{m:02}-{d:02}");
    }
}

/// A timestamp in units of `per_second` since 1970 as `YYYY-MM-DDTHH:MM:SS`.
pub(crate) fn timestamp(v: i64, per_second: i64, text: &mut String) {
    let seconds = v.div_euclid(per_second);
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    if let Some((y, m, d)) = civil(days) {
        let (h, min, s) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
        let _ = write!(text, "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}");
    }
}

fn civil(days: i64) -> Option<(i64, i64, i64)> {
    // 0000-03-01 to 9999-12-31.
    if !(-719_468..=2_932_896).contains(&days) {
        return None;
    }
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Some((y, m, d))
}

/// A column's names from the outermost in, as a person reads them: the wrappers the LIST and
/// MAP annotations put around a list's elements and a map's entries are left out
/// (`contacts.list.element.email` is `contacts.email`, `tags.key_value.key` is `tags.key`).
pub(super) fn names(root: &Type, parts: &[String]) -> Vec<String> {
    let mut names = Vec::with_capacity(parts.len());
    let mut node = Some(root);
    // The next part is a wrapper too: a list's one element.
    let mut element = false;
    for part in parts {
        let parent = node;
        node = parent.and_then(|n| {
            n.is_group()
                .then(|| n.get_fields().iter().find(|f| f.name() == part))
                .flatten()
                .map(|f| f.as_ref())
        });
        if element {
            element = false;
            continue;
        }
        if parent.is_some_and(is_list) {
            element = node.is_some_and(|n| n.is_group() && n.get_fields().len() == 1);
            continue;
        }
        if parent.is_some_and(is_map) {
            continue;
        }
        names.push(part.chars().take(crate::MAX_NAME).collect());
    }
    if names.is_empty() {
        // A bare list of values: its own name.
        names.extend(parts.first().cloned());
    }
    names
}

fn is_list(t: &Type) -> bool {
    let info = t.get_basic_info();
    info.converted_type() == ConvertedType::LIST
        || matches!(info.logical_type_ref(), Some(LogicalType::List))
}

fn is_map(t: &Type) -> bool {
    let info = t.get_basic_info();
    matches!(
        info.converted_type(),
        ConvertedType::MAP | ConvertedType::MAP_KEY_VALUE
    ) || matches!(info.logical_type_ref(), Some(LogicalType::Map))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(f: impl FnOnce(&mut String)) -> String {
        let mut text = String::new();
        f(&mut text);
        text
    }

    #[test]
    fn decimals_dates_and_timestamps_read_as_a_csv_writes_them() {
        let dec = Render::Decimal { scale: 2 };
        assert_eq!(rendered(|t| dec.int(123_456, t)), "1234.56");
        assert_eq!(rendered(|t| dec.int(-5, t)), "-0.05");
        assert_eq!(rendered(|t| dec.bytes(&[0x01, 0xe2, 0x40], t)), "1234.56");
        assert_eq!(rendered(|t| dec.bytes(&[0xff, 0xfb], t)), "-0.05");
        assert_eq!(rendered(|t| Render::Date.int(0, t)), "1970-01-01");
        assert_eq!(rendered(|t| Render::Date.int(5_551, t)), "1985-03-14");
        assert_eq!(rendered(|t| Render::Date.int(-25_567, t)), "1900-01-01");
        assert_eq!(rendered(|t| Render::Date.int(i64::from(i32::MAX), t)), "");
        let micros = Render::Timestamp {
            per_second: 1_000_000,
        };
        assert_eq!(
            rendered(|t| micros.int(479_606_400_000_000 + 3_723_000_000, t)),
            "1985-03-14T01:02:03"
        );
        assert_eq!(
            rendered(|t| Render::Unsigned { bits: 64 }.int(-1, t)),
            u64::MAX.to_string()
        );
        assert_eq!(rendered(|t| Render::MaybeText.bytes(&[0xff, 0x00], t)), "");
        assert_eq!(rendered(|t| Render::Float.float(f64::NAN, t)), "");
        assert_eq!(rendered(|t| Render::Float.float(85_000.5, t)), "85000.5");
    }
}
