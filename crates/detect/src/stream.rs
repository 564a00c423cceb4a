//! Scanning content that arrives in pieces, in bounded memory: gzip is inflated as it comes,
//! the bytes are decoded to text, and the text is scanned in windows that overlap by
//! [`MAX_REACH`] on each side, so a match cut by a window boundary is seen whole by one window
//! and reported by exactly one.

use std::io::Write;

use flate2::write::MultiGzDecoder;

use crate::content::{self, Encoding, Format, Hint, SNIFF_LEN, SkipReason};
use crate::markup::Markup;
use crate::scan::Detector;
use crate::structure::Tracker;
use crate::types::{Finding, MAX_REACH, Options, Window};

/// The default window: 1 MiB of text.
const DEFAULT_WINDOW: usize = 1 << 20;
/// Compressed input is inflated this much at a time, so a gzip bomb cannot fill memory: deflate
/// expands at most about 1032:1, so one step holds at most about 4 MiB.
const INFLATE_STEP: usize = 4 << 10;

/// The most findings a stream reports into one caller's list before it stops with
/// [`SkipReason::TooManyFindings`]. Callers keep an object's findings together, at a few hundred
/// bytes each; a dense gzip (one value repeated) inflates a thousandfold, and without this one
/// object could exhaust a worker's memory. Checked after each inflated step (4 KiB of gzip, at
/// most about 4 MiB of text), so the list stays within a few hundred thousand findings.
pub const MAX_FINDINGS_PER_OBJECT: usize = 100_000;

/// What a finished scan read.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub format: Format,
    pub encoding: Encoding,
    /// Whether the content was gzip.
    pub compressed: bool,
    /// Bytes of content read (compressed, when it was).
    pub bytes_read: u64,
    /// Bytes of decoded text scanned.
    pub text_bytes: u64,
    /// The findings, when the whole scan was asked for at once; empty from a [`Stream`], whose
    /// findings went out as they were found.
    pub findings: Vec<Finding>,
}

/// A scan in progress. Push the content's pieces in order, then finish.
#[derive(Debug)]
pub struct Stream<'d> {
    detector: &'d Detector,
    options: Options,
    hint_format: Option<Format>,
    hint: HintOwned,
    window_size: usize,
    /// Raw bytes held until gzip can be recognized (two bytes).
    raw_head: Vec<u8>,
    gunzip: Option<MultiGzDecoder<Vec<u8>>>,
    gzip_decided: bool,
    /// Decompressed bytes held until the encoding and format can be sniffed.
    head: Vec<u8>,
    text: Option<Text>,
    bytes_read: u64,
    skipped: Option<SkipReason>,
    /// The most findings the caller's list may hold ([`Stream::with_findings_limit`]).
    findings_limit: usize,
}

/// The hint, kept past the borrow of the caller's strings.
#[derive(Debug, Default)]
struct HintOwned {
    content_type: Option<String>,
    file_name: Option<String>,
}

/// Decoded text and the scanning state.
#[derive(Debug)]
struct Text {
    encoding: Encoding,
    format: Format,
    tracker: Tracker,
    /// Bytes of an unfinished character (UTF-8) or code unit (UTF-16).
    pending: Vec<u8>,
    /// A UTF-16 high surrogate waiting for its pair.
    high_surrogate: Option<u16>,
    /// For XML and HTML, the markup filter, which blanks what is decoded before it is
    /// buffered: decoding comes first, so that UTF-16 and Latin-1 markup is blanked too, and
    /// the blanked text keeps the decoded text's offsets.
    markup: Option<Markup>,
    buffer: String,
    /// The absolute offset of `buffer[0]`.
    base: usize,
    report_from: usize,
    custom_from: usize,
}

// The detector's entry points for bytes and streams live here, beside the stream they drive,
// so that the scanner does not depend back on this module.
impl Detector {
    /// Every finding in a file's bytes: gzip is inflated, the encoding and format are sniffed
    /// (the hint helps), binary content is skipped with the reason.
    pub fn scan_bytes(
        &self,
        bytes: &[u8],
        hint: Hint<'_>,
        options: &Options,
    ) -> Result<Report, SkipReason> {
        let mut stream = self.stream(hint, *options);
        let mut findings = Vec::new();
        stream.push(bytes, &mut findings)?;
        let mut report = stream.finish(&mut findings)?;
        report.findings = findings;
        Ok(report)
    }

    /// A scan of content that arrives in pieces, in bounded memory.
    pub fn stream(&self, hint: Hint<'_>, options: Options) -> Stream<'_> {
        Stream::new(self, hint, options)
    }
}

impl<'d> Stream<'d> {
    pub(crate) fn new(detector: &'d Detector, hint: Hint<'_>, options: Options) -> Self {
        Self {
            detector,
            options,
            hint_format: None,
            hint: HintOwned {
                content_type: hint.content_type.map(str::to_owned),
                file_name: hint.file_name.map(str::to_owned),
            },
            window_size: DEFAULT_WINDOW,
            raw_head: Vec::new(),
            gunzip: None,
            gzip_decided: false,
            head: Vec::new(),
            text: None,
            bytes_read: 0,
            skipped: None,
            findings_limit: MAX_FINDINGS_PER_OBJECT,
        }
    }

    /// Forces the format instead of sniffing it.
    pub fn with_format(mut self, format: Format) -> Self {
        self.hint_format = Some(format);
        self
    }

    /// Scans in windows of `bytes` (at least 4 KiB) instead of 1 MiB. Smaller windows use less
    /// memory and rescan more overlap.
    pub fn with_window(mut self, bytes: usize) -> Self {
        self.window_size = bytes.max(4 * MAX_REACH).max(4096);
        self
    }

    /// Stops with [`SkipReason::TooManyFindings`] once the caller's list holds more than `limit`
    /// findings instead of [`MAX_FINDINGS_PER_OBJECT`]: for a caller that empties the list after
    /// each push, for whom it bounds one push's findings rather than the object's.
    pub fn with_findings_limit(mut self, limit: usize) -> Self {
        self.findings_limit = limit;
        self
    }

    /// Bytes of content held right now, to check that memory stays bounded.
    pub fn buffered(&self) -> usize {
        let text = self
            .text
            .as_ref()
            .map_or(0, |t| t.buffer.capacity() + t.pending.capacity());
        let inflated = self.gunzip.as_ref().map_or(0, |g| g.get_ref().capacity());
        self.raw_head.capacity() + self.head.capacity() + text + inflated
    }

    /// Scans the next piece of content. Findings go to `findings` as their windows complete.
    pub fn push(&mut self, bytes: &[u8], findings: &mut Vec<Finding>) -> Result<(), SkipReason> {
        if let Some(reason) = self.skipped {
            return Err(reason);
        }
        self.bytes_read += bytes.len() as u64;
        let result = self.raw(bytes, findings);
        if let Err(reason) = result {
            self.skipped = Some(reason);
        }
        result
    }

    /// Scans what is left and says what was read.
    pub fn finish(mut self, findings: &mut Vec<Finding>) -> Result<Report, SkipReason> {
        if let Some(reason) = self.skipped {
            return Err(reason);
        }
        if !self.gzip_decided {
            self.gzip_decided = true;
            let head = std::mem::take(&mut self.raw_head);
            self.start_gzip(&head);
            self.inflate_or_decode(&head, findings)?;
        }
        if let Some(mut gunzip) = self.gunzip.take() {
            gunzip.try_finish().map_err(|_| SkipReason::CorruptGzip)?;
            let out = std::mem::take(gunzip.get_mut());
            self.decoded(&out, findings)?;
            self.gunzip = Some(gunzip);
        }
        if self.text.is_none() {
            let head = std::mem::take(&mut self.head);
            self.begin(&head, findings)?;
        }
        let compressed = self.gunzip.is_some();
        let detector = self.detector;
        let options = self.options;
        let Some(text) = self.text.as_mut() else {
            unreachable!("begin() sets the text")
        };
        text.flush();
        text.scan(detector, &options, usize::MAX, findings);
        Ok(Report {
            format: text.format,
            encoding: text.encoding,
            compressed,
            bytes_read: self.bytes_read,
            text_bytes: (text.base + text.buffer.len()) as u64,
            findings: Vec::new(),
        })
    }

    fn start_gzip(&mut self, head: &[u8]) {
        if content::is_gzip(head) {
            self.gunzip = Some(MultiGzDecoder::new(Vec::new()));
        }
    }

    fn raw(&mut self, bytes: &[u8], findings: &mut Vec<Finding>) -> Result<(), SkipReason> {
        if self.gzip_decided {
            return self.inflate_or_decode(bytes, findings);
        }
        self.raw_head.extend_from_slice(bytes);
        if self.raw_head.len() < content::GZIP_MAGIC.len() {
            return Ok(());
        }
        self.gzip_decided = true;
        let head = std::mem::take(&mut self.raw_head);
        self.start_gzip(&head);
        self.inflate_or_decode(&head, findings)
    }

    fn inflate_or_decode(
        &mut self,
        bytes: &[u8],
        findings: &mut Vec<Finding>,
    ) -> Result<(), SkipReason> {
        if self.gunzip.is_none() {
            return self.decoded(bytes, findings);
        }
        for piece in bytes.chunks(INFLATE_STEP) {
            let out = {
                let Some(gunzip) = self.gunzip.as_mut() else {
                    unreachable!("checked above")
                };
                gunzip
                    .write_all(piece)
                    .map_err(|_| SkipReason::CorruptGzip)?;
                std::mem::take(gunzip.get_mut())
            };
            self.decoded(&out, findings)?;
        }
        Ok(())
    }

    /// Takes decompressed bytes: sniffs the first ones, then decodes and scans; stops once the
    /// findings pass [`MAX_FINDINGS_PER_OBJECT`].
    fn decoded(&mut self, bytes: &[u8], findings: &mut Vec<Finding>) -> Result<(), SkipReason> {
        self.decoded_within(bytes, findings)?;
        if findings.len() > self.findings_limit {
            return Err(SkipReason::TooManyFindings);
        }
        Ok(())
    }

    fn decoded_within(
        &mut self,
        bytes: &[u8],
        findings: &mut Vec<Finding>,
    ) -> Result<(), SkipReason> {
        let mut bytes = bytes;
        if self.text.is_none() {
            let (head, rest) = bytes.split_at(bytes.len().min(SNIFF_LEN - self.head.len()));
            self.head.extend_from_slice(head);
            if self.head.len() < SNIFF_LEN {
                return Ok(());
            }
            let head = std::mem::take(&mut self.head);
            self.begin(&head, findings)?;
            bytes = rest;
        }
        // Decoded half a window at a time, so one huge push stays bounded too.
        for piece in bytes.chunks(self.window_size / 2) {
            if let Some(text) = self.text.as_mut() {
                text.decode(piece);
            }
            self.scan_full_windows(findings);
        }
        Ok(())
    }

    /// Scans and slides past every full window in the buffer.
    fn scan_full_windows(&mut self, findings: &mut Vec<Finding>) {
        let Some(text) = self.text.as_mut() else {
            return;
        };
        while text.buffer.len() >= self.window_size {
            let until = text.base + text.buffer.len() - MAX_REACH;
            text.scan(self.detector, &self.options, until, findings);
            text.slide(until);
        }
    }

    /// Decides the encoding and format from the first bytes, then scans them.
    fn begin(&mut self, head: &[u8], findings: &mut Vec<Finding>) -> Result<(), SkipReason> {
        let (encoding, bom) = content::sniff(head)?;
        let mut text = Text {
            encoding,
            format: Format::Text,
            tracker: Tracker::new(Format::Text),
            pending: Vec::new(),
            high_surrogate: None,
            markup: None,
            buffer: String::new(),
            base: 0,
            report_from: 0,
            custom_from: 0,
        };
        text.decode(&head[bom..]);
        let format = self.hint_format.unwrap_or_else(|| {
            let hint = Hint {
                content_type: self.hint.content_type.as_deref(),
                file_name: self.hint.file_name.as_deref(),
            };
            content::format(&hint, &text.buffer)
        });
        text.format = format;
        text.tracker = Tracker::new(format);
        if format == Format::Markup {
            text.start_markup();
        }
        self.text = Some(text);
        self.scan_full_windows(findings);
        Ok(())
    }
}

impl Text {
    fn scan(
        &mut self,
        detector: &Detector,
        options: &Options,
        until: usize,
        findings: &mut Vec<Finding>,
    ) {
        let window = Window {
            text: &self.buffer,
            base: self.base,
            report_from: self.report_from,
            report_until: until,
            custom_from: self.custom_from,
        };
        self.custom_from = detector
            .scan_window(&window, options, &mut self.tracker, findings)
            .max(until);
    }

    /// Moves on past a scanned window: findings before `until` were reported; the text from
    /// `MAX_REACH` before it is kept as the next window's left context.
    fn slide(&mut self, until: usize) {
        let local = until - self.base;
        let from = self.tracker.position().max(self.base);
        if local > from - self.base {
            self.tracker
                .feed(&self.buffer.as_bytes()[from - self.base..local]);
        }
        self.report_from = until;
        let mut keep = local.saturating_sub(MAX_REACH);
        while !self.buffer.is_char_boundary(keep) {
            keep -= 1;
        }
        self.buffer.drain(..keep);
        self.base += keep;
    }

    /// Blanks markup from here on, the text decoded to sniff the format included.
    fn start_markup(&mut self) {
        let mut markup = Markup::new();
        let head = std::mem::take(&mut self.buffer);
        markup.push_stripped(&head, &mut self.buffer);
        self.markup = Some(markup);
    }

    /// Appends decoded bytes to the buffer, markup blanked; an unfinished character waits for
    /// the next piece.
    fn decode(&mut self, bytes: &[u8]) {
        let from = self.buffer.len();
        self.decode_raw(bytes);
        if let Some(markup) = self.markup.as_mut() {
            let decoded = self.buffer.split_off(from);
            markup.push_stripped(&decoded, &mut self.buffer);
        }
    }

    fn decode_raw(&mut self, bytes: &[u8]) {
        match self.encoding {
            Encoding::Latin1 => self.buffer.extend(bytes.iter().map(|&b| char::from(b))),
            Encoding::Utf8 => {
                let mut input = if self.pending.is_empty() {
                    bytes
                } else {
                    self.pending.extend_from_slice(bytes);
                    &self.pending[..]
                };
                let mut rest = Vec::new();
                loop {
                    match std::str::from_utf8(input) {
                        Ok(valid) => {
                            self.buffer.push_str(valid);
                            break;
                        }
                        Err(e) => {
                            let (valid, after) = input.split_at(e.valid_up_to());
                            // Checked by from_utf8 up to here.
                            self.buffer
                                .push_str(std::str::from_utf8(valid).unwrap_or_default());
                            match e.error_len() {
                                Some(len) => {
                                    self.buffer.push(char::REPLACEMENT_CHARACTER);
                                    input = &after[len..];
                                }
                                None => {
                                    rest = after.to_vec();
                                    break;
                                }
                            }
                        }
                    }
                }
                self.pending = rest;
            }
            Encoding::Utf16Le | Encoding::Utf16Be => {
                self.pending.extend_from_slice(bytes);
                let whole = self.pending.len() / 2 * 2;
                let little = self.encoding == Encoding::Utf16Le;
                let mut units: Vec<u16> = self.pending[..whole]
                    .chunks_exact(2)
                    .map(|pair| {
                        let pair = [pair[0], pair[1]];
                        if little {
                            u16::from_le_bytes(pair)
                        } else {
                            u16::from_be_bytes(pair)
                        }
                    })
                    .collect();
                self.pending.drain(..whole);
                if let Some(high) = self.high_surrogate.take() {
                    units.insert(0, high);
                }
                if units.last().is_some_and(|u| (0xD800..0xDC00).contains(u)) {
                    self.high_surrogate = units.pop();
                }
                self.buffer.extend(
                    char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)),
                );
            }
        }
    }

    /// The end of the content: unfinished characters become replacement characters.
    fn flush(&mut self) {
        if !self.pending.is_empty() || self.high_surrogate.is_some() {
            self.pending.clear();
            self.high_surrogate = None;
            self.buffer.push(char::REPLACEMENT_CHARACTER);
        }
    }
}
