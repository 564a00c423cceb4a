//! `dpsctl detect`: scan a file or standard input for PII, for operators and for evaluation.
//! Findings go to stdout, one per line; the summary goes to stderr. Values are never printed.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use detect::{Classifiers, Detector, Finding, Hint, Location, Options};

#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum Output {
    /// One line per finding: where, what, how sure.
    #[default]
    Text,
    /// One JSON object per line: pii_type, category, start, end, confidence, location,
    /// evidence.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// How findings are printed.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    format: Output,
    /// Findings below this confidence (0 to 1) are not printed.
    #[arg(long, default_value_t = detect::DEFAULT_MIN_CONFIDENCE, value_parser = confidence)]
    min_confidence: f32,
    /// The content's MIME type, when the file name does not tell (text/csv,
    /// application/x-ndjson, ...).
    #[arg(long)]
    content_type: Option<String>,
    /// Custom classifiers to run too: a YAML or JSON list.
    #[arg(long)]
    classifiers: Option<PathBuf>,
    /// The file to scan; `-` or nothing reads standard input. Gzip is inflated.
    path: Option<PathBuf>,
}

fn confidence(raw: &str) -> Result<f32, String> {
    match raw.parse::<f32>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err("must be a number from 0 to 1".into()),
    }
}

/// Scans and prints. Content skipped as binary is reported on stderr, not as an error.
pub fn run(args: Args) -> anyhow::Result<()> {
    let detector = match &args.classifiers {
        None => Detector::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let specs = detect::ClassifierSpec::list_from_yaml(&text)
                .with_context(|| format!("in {}", path.display()))?;
            Detector::with_classifiers(
                Classifiers::compile(&specs).with_context(|| format!("in {}", path.display()))?,
            )
        }
    };
    let stdin = args.path.as_ref().is_none_or(|p| p.as_os_str() == "-");
    let name = args.path.as_ref().map(|p| p.to_string_lossy().into_owned());
    let mut input: Box<dyn Read> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        let path = args.path.as_ref().context("a path")?;
        Box::new(std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?)
    };
    let hint = Hint {
        content_type: args.content_type.as_deref(),
        file_name: if stdin { None } else { name.as_deref() },
    };
    let options = Options {
        min_confidence: args.min_confidence,
        with_values: false,
    };
    let started = Instant::now();
    let mut printer = Printer {
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        counts: BTreeMap::new(),
        format: args.format,
    };
    let source = if stdin {
        "stdin".to_owned()
    } else {
        name.clone().unwrap_or_default()
    };
    // An archive is walked member by member; anything else streams into detection.
    let head = read_head(&mut input).context("reading the content")?;
    if let Some(kind) = extract::container(&head) {
        let file = if stdin {
            spool(&head, &mut input).context("spooling standard input")?
        } else {
            let path = args.path.as_ref().context("a path")?;
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?
        };
        return archive(
            &detector,
            options,
            file,
            kind,
            &source,
            &mut printer,
            started,
        );
    }
    let mut stream = detector.stream(hint, options);
    let mut found = Vec::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut scanned = match stream.push(&head, &mut found) {
        Ok(()) => None,
        Err(reason) => Some(Err(reason)),
    };
    printer.print(&mut found, None)?;
    let scanned = match scanned.take() {
        Some(skipped) => skipped,
        None => loop {
            let read = match input.read(&mut buffer) {
                Ok(0) => break stream.finish(&mut found),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("reading the content"),
            };
            if let Err(reason) = stream.push(&buffer[..read], &mut found) {
                break Err(reason);
            }
            printer.print(&mut found, None)?;
        },
    };
    printer.print(&mut found, None)?;
    printer.out.flush()?;
    let elapsed = started.elapsed().as_secs_f64();
    match scanned {
        Ok(report) => {
            eprintln!(
                "{source}: {} in {} bytes of {}{} {}, {:.1} ms ({:.0} MB/s)",
                printer.summary(),
                report.text_bytes,
                report.format.as_str(),
                if report.compressed { " (gzip)" } else { "" },
                report.encoding.as_str(),
                elapsed * 1e3,
                report.text_bytes as f64 / 1e6 / elapsed.max(1e-9),
            );
            Ok(())
        }
        Err(reason) => {
            eprintln!("{source}: skipped: {reason}");
            Ok(())
        }
    }
}

/// Up to `extract::HEAD` bytes from the start of `input`: enough to tell an archive.
fn read_head(input: &mut dyn Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(extract::HEAD);
    input.take(extract::HEAD as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Standard input written to an anonymous temporary file, for an archive whose directory is
/// at its end.
fn spool(head: &[u8], input: &mut dyn Read) -> std::io::Result<std::fs::File> {
    use std::io::Seek as _;
    let mut file = tempfile::tempfile()?;
    file.write_all(head)?;
    std::io::copy(input, &mut file)?;
    file.rewind()?;
    Ok(file)
}

/// Scans every member of an archive and prints its findings, each with the member's path.
fn archive(
    detector: &Detector,
    options: Options,
    file: std::fs::File,
    kind: extract::Container,
    source: &str,
    printer: &mut Printer<impl Write>,
    started: Instant,
) -> anyhow::Result<()> {
    let name = source.rsplit('/').next().unwrap_or(source);
    let mut members = Members {
        detector,
        options,
        printer,
        bytes: 0,
        skipped: BTreeMap::new(),
        failed: None,
    };
    let walked = extract::walk(file, kind, name, extract::Limits::default(), &mut members);
    if let Some(e) = members.failed.take() {
        return Err(e).context("printing findings");
    }
    let Members { bytes, skipped, .. } = members;
    printer.out.flush()?;
    let elapsed = started.elapsed().as_secs_f64();
    match walked {
        Ok(report) => {
            let skipped: Vec<String> = skipped.iter().map(|(r, n)| format!("{r}={n}")).collect();
            let read = match kind {
                extract::Container::Parquet => "in a parquet file".to_owned(),
                extract::Container::Avro => "in an avro file".to_owned(),
                extract::Container::Pdf => "in a pdf".to_owned(),
                extract::Container::Cfb => "in an xls workbook".to_owned(),
                _ => format!("in {} members of a {}", report.members, kind.as_str()),
            };
            eprintln!(
                "{source}: {} {read} ({} bytes of text){}, {:.1} ms",
                printer.summary(),
                bytes,
                if skipped.is_empty() {
                    String::new()
                } else {
                    format!("; skipped: {}", skipped.join(" "))
                },
                elapsed * 1e3,
            );
        }
        Err(reason) => eprintln!("{source}: skipped: {reason}"),
    }
    Ok(())
}

/// Detection over each member of an archive, printing as it goes.
struct Members<'a, W: Write> {
    detector: &'a Detector,
    options: Options,
    printer: &'a mut Printer<W>,
    bytes: u64,
    skipped: BTreeMap<&'static str, usize>,
    /// Writing to stdout failed: the walk is not stopped, but nothing more is printed.
    failed: Option<std::io::Error>,
}

impl<W: Write> extract::Sink for Members<'_, W> {
    fn member(
        &mut self,
        path: &[String],
        name: &str,
        content: &mut dyn Read,
    ) -> std::io::Result<()> {
        let hint = Hint {
            content_type: None,
            file_name: Some(name),
        };
        let mut stream = self.detector.stream(hint, self.options);
        let mut found = Vec::new();
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            let n = match content.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let pushed = stream.push(&buffer[..n], &mut found);
            self.print(&mut found, path);
            if let Err(reason) = pushed {
                *self.skipped.entry(reason.as_str()).or_default() += 1;
                return Ok(());
            }
        }
        match stream.finish(&mut found) {
            Ok(report) => self.bytes += report.text_bytes,
            Err(reason) => *self.skipped.entry(reason.as_str()).or_default() += 1,
        }
        self.print(&mut found, path);
        Ok(())
    }

    fn values(&mut self, path: &[String], column: &extract::Column<'_>) {
        let names: Vec<&str> = column.names.iter().map(String::as_str).collect();
        let mut found =
            self.detector
                .scan_column(column.text, &names, column.rows, column.unit, &self.options);
        self.bytes += column.text.len() as u64;
        self.print(&mut found, path);
    }

    fn skipped(&mut self, _path: &[String], reason: extract::Skip) {
        *self.skipped.entry(reason.as_str()).or_default() += 1;
    }
}

impl<W: Write> Members<'_, W> {
    fn print(&mut self, found: &mut Vec<Finding>, path: &[String]) {
        // A path of the file alone (a compressed file, a Parquet file) says nothing more.
        let archive = (path.len() > 1).then_some(path);
        if self.failed.is_none()
            && let Err(e) = self.printer.print(found, archive)
        {
            self.failed = Some(e);
        }
        found.clear();
    }
}

/// Findings printed as they come, counted by type.
struct Printer<W: Write> {
    out: std::io::BufWriter<W>,
    counts: BTreeMap<String, usize>,
    format: Output,
}

impl<W: Write> Printer<W> {
    fn print(
        &mut self,
        found: &mut Vec<Finding>,
        archive: Option<&[String]>,
    ) -> std::io::Result<()> {
        for finding in found.drain(..) {
            match self.counts.get_mut(finding.pii_type.as_str()) {
                Some(n) => *n += 1,
                None => {
                    self.counts.insert(finding.pii_type.as_str().to_owned(), 1);
                }
            }
            write_line(&mut self.out, &finding, archive, self.format)?;
        }
        Ok(())
    }

    /// `N findings type=n ...`.
    fn summary(&self) -> String {
        let total: usize = self.counts.values().sum();
        let by_type: Vec<String> = self
            .counts
            .iter()
            .map(|(t, n)| format!("{t}={n}"))
            .collect();
        format!(
            "{total} findings{}{}",
            if by_type.is_empty() { "" } else { " " },
            by_type.join(" ")
        )
    }
}

/// Writes one finding as a line, straight into `out`: no tree of values and no string per
/// finding, so printing a million findings costs well under a second more than scanning.
fn write_line(
    out: &mut impl Write,
    finding: &Finding,
    archive: Option<&[String]>,
    format: Output,
) -> std::io::Result<()> {
    match format {
        Output::Json => {
            serde_json::to_writer(&mut *out, &JsonFinding::of(finding, archive))?;
            out.write_all(b"\n")
        }
        Output::Text => {
            if let Some(path) = archive {
                for name in path {
                    write!(out, "{name} > ")?;
                }
            }
            match &finding.location {
                Location::Line { line, column } => write!(out, "{line}:{column}")?,
                Location::Csv {
                    row,
                    header: Some(header),
                    ..
                } => write!(out, "row {row}, {header}")?,
                Location::Csv { row, column, .. } => write!(out, "row {row}, column {column}")?,
                Location::Json { line, path } => write!(out, "{line}:{path}")?,
                Location::Column { column, row } => write!(out, "row {row}, {column}")?,
                Location::Record { field, record } => write!(out, "record {record}, {field}")?,
                Location::Cell { sheet, cell, .. } => write!(out, "{sheet}!{cell}")?,
                Location::Paragraph { part, paragraph } => {
                    write!(out, "{part}, paragraph {paragraph}")?;
                }
                Location::Slide { slide, paragraph } => {
                    write!(out, "slide {slide}, paragraph {paragraph}")?;
                }
                Location::Page { page, line } => write!(out, "page {page}, line {line}")?,
            }
            writeln!(
                out,
                "\t{}\t{}\t{:.2}\t{}..{}",
                finding.pii_type.as_str(),
                finding.category.as_str(),
                finding.confidence,
                finding.start,
                finding.end
            )
        }
    }
}

/// A finding as `--format json` prints it, members in this order.
#[derive(serde::Serialize)]
struct JsonFinding<'a> {
    pii_type: &'a str,
    category: &'a str,
    start: usize,
    end: usize,
    /// Rounded to two decimals.
    confidence: f64,
    location: JsonLocation<'a>,
    evidence: JsonEvidence<'a>,
    /// In an archive: the member's path from the archive down.
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<&'a [String]>,
}

#[derive(serde::Serialize)]
struct JsonEvidence<'a> {
    pattern: &'a str,
    validator: Option<&'static str>,
    context: &'a [std::borrow::Cow<'static, str>],
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum JsonLocation<'a> {
    Line {
        line: usize,
        column: usize,
    },
    Csv {
        row: usize,
        column: usize,
        header: Option<&'a str>,
    },
    Json {
        line: usize,
        path: &'a str,
    },
    Column {
        column: &'a str,
        row: u64,
    },
    Record {
        field: &'a str,
        record: u64,
    },
    Cell {
        sheet: &'a str,
        cell: &'a str,
        header: Option<&'a str>,
    },
    Paragraph {
        part: &'a str,
        paragraph: u64,
    },
    Slide {
        slide: u32,
        paragraph: u64,
    },
    Page {
        page: u32,
        line: u64,
    },
}

impl<'a> JsonFinding<'a> {
    fn of(finding: &'a Finding, archive: Option<&'a [String]>) -> Self {
        JsonFinding {
            archive,
            category: finding.category.as_str(),
            confidence: (f64::from(finding.confidence) * 100.0).round() / 100.0,
            end: finding.end,
            evidence: JsonEvidence {
                context: &finding.evidence.context,
                pattern: &finding.evidence.pattern,
                validator: finding.evidence.validator,
            },
            location: match &finding.location {
                Location::Line { line, column } => JsonLocation::Line {
                    column: *column,
                    line: *line,
                },
                Location::Csv {
                    row,
                    column,
                    header,
                } => JsonLocation::Csv {
                    column: *column,
                    header: header.as_deref(),
                    row: *row,
                },
                Location::Json { line, path } => JsonLocation::Json { line: *line, path },
                Location::Column { column, row } => JsonLocation::Column { column, row: *row },
                Location::Record { field, record } => JsonLocation::Record {
                    field,
                    record: *record,
                },
                Location::Cell {
                    sheet,
                    cell,
                    header,
                } => JsonLocation::Cell {
                    sheet,
                    cell,
                    header: header.as_deref(),
                },
                Location::Paragraph { part, paragraph } => JsonLocation::Paragraph {
                    part,
                    paragraph: *paragraph,
                },
                Location::Slide { slide, paragraph } => JsonLocation::Slide {
                    slide: *slide,
                    paragraph: *paragraph,
                },
                Location::Page { page, line } => JsonLocation::Page {
                    page: *page,
                    line: *line,
                },
            },
            pii_type: finding.pii_type.as_str(),
            start: finding.start,
        }
    }
}
