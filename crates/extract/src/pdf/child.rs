//! A PDF read where [`crate::isolation`] says: in this process, or in a child process. The
//! parent hands the child the file on its standard input and replays the lines it writes back
//! into the sink, as they come; the child caps its own memory, processor time and core files
//! before it reads a byte.
//!
//! What the child writes, all integers little-endian:
//! - `L` page (u32), text length (u32), text, row count (u32), rows (u64 each): one run of a
//!   page's lines, as [`Sink::values`] received it;
//! - `E` handed (u8), skip count (u8), skips (u8 each, their place in [`Skip::ALL`]): the end
//!   of a document that was read;
//! - `S` skip (u8): the end of a document that could not be read.
//!
//! Anything else, or an end that does not come (the child was ended by a cap, the deadline or
//! a crash), leaves the document cut short: what was replayed stays read, and the rest is
//! `pdf_limit`.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rustix::process::{Resource, Rlimit, setrlimit};

use super::{MAX_FILE, parse, push_once};
use crate::isolation::{self, CHILD, Isolation};
use crate::limits::reached;
use crate::sink::{Column, TableRead};
use crate::{Limits, Sink, Skip, TableUnit};

/// The longest run of text or rows one frame may carry: the child hands a page's lines over
/// in runs of a few hundred kilobytes.
const MAX_FRAME: u32 = 16 << 20;

/// Reads every page of the PDF in `source` into `sink`, its lines located by page: in a child
/// when [`isolation::current`] says so, in this process otherwise.
pub(crate) fn read(
    mut source: impl Read + Seek,
    limits: Limits,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let length = source
        .seek(SeekFrom::End(0))
        .map_err(|e| reached(&e).unwrap_or(Skip::CorruptPdf))?;
    if length > MAX_FILE {
        return Err(Skip::PdfLimit);
    }
    source
        .rewind()
        .map_err(|e| reached(&e).unwrap_or(Skip::CorruptPdf))?;
    let mut bytes = Vec::with_capacity(length as usize);
    source
        .read_to_end(&mut bytes)
        .map_err(|e| reached(&e).unwrap_or(Skip::CorruptPdf))?;
    match isolation::current() {
        Some(isolation) => in_child(bytes, limits.max_ratio, &isolation, path, sink),
        None => parse(bytes, limits.max_ratio, path, sink),
    }
}

/// Call first in `main`, before any thread starts. Started as a PDF-reading child, this
/// process reads the PDF on its standard input, writes its lines to its standard output and
/// exits here. Otherwise later PDFs are parsed in children of this program
/// ([`Isolation::this_program`]).
pub fn init() {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|first| first == CHILD) {
        let args: Vec<String> = args.filter_map(|a| a.into_string().ok()).collect();
        std::process::exit(serve(&args));
    }
    isolation::set(Some(Isolation::this_program()));
}

/// Reads the PDF `bytes` in a child as `isolation` says, its lines into `sink` at `path`.
fn in_child(
    bytes: Vec<u8>,
    max_ratio: u64,
    isolation: &Isolation,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let spawned = Command::new(&isolation.program)
        .arg(CHILD)
        .arg(max_ratio.to_string())
        .arg(isolation.memory.to_string())
        .arg(isolation.deadline.as_secs().max(1).to_string())
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    // No process to read it in (a process limit, no memory): the file is left unread as one
    // past what can be spent on it, never parsed here instead.
    let Ok(mut child) = spawned else {
        return Err(Skip::PdfLimit);
    };
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Skip::PdfLimit);
    };
    let (ended, output_ended) = mpsc::channel();
    let deadline = Instant::now() + isolation.deadline;
    let watchdog = std::thread::spawn(move || watch(child, deadline, &output_ended));
    // A child that stops reading has died or been ended: what it wrote says what it read.
    let _ = input.write_all(&bytes);
    drop(input);
    drop(bytes);
    let replayed = replay(&mut BufReader::new(output), path, sink);
    drop(ended);
    let exit = watchdog.join().ok().flatten();
    match replayed {
        Replayed::Ended(result) if exit.is_some_and(|status| status.success()) => result,
        Replayed::Ended(_) | Replayed::Cut { .. } => {
            let handed = matches!(replayed, Replayed::Cut { handed: true });
            if handed {
                Ok(TableRead {
                    handed,
                    skips: vec![Skip::PdfLimit],
                })
            } else {
                Err(Skip::PdfLimit)
            }
        }
    }
}

/// Waits for the child to exit, ending it at the deadline. Its exit status, or `None` once it
/// was ended (or could not be waited for).
fn watch(mut child: Child, deadline: Instant, output_ended: &Receiver<()>) -> Option<ExitStatus> {
    let mut pause = Duration::from_micros(100);
    let mut ended = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => break,
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        if ended {
            // The output is closed: the child is exiting, or hangs on with its output shut.
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(50));
        } else if let Err(RecvTimeoutError::Disconnected) | Ok(()) = output_ended.recv_timeout(left)
        {
            ended = true;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// How the child's output ended.
enum Replayed {
    /// With its end frame: what the child's read returned.
    Ended(Result<TableRead, Skip>),
    /// Before it, whether lines were replayed already.
    Cut { handed: bool },
}

/// Replays the child's frames into `sink` until the end frame or until they stop making sense.
fn replay(output: &mut impl BufRead, path: &[String], sink: &mut dyn Sink) -> Replayed {
    let mut handed = false;
    let mut text = Vec::new();
    let mut rows = Vec::new();
    loop {
        let Ok(tag) = byte(output) else {
            return Replayed::Cut { handed };
        };
        match tag {
            b'L' => {
                let Ok(page) = number(output) else {
                    return Replayed::Cut { handed };
                };
                if run(output, &mut text, &mut rows).is_err() {
                    return Replayed::Cut { handed };
                }
                let Ok(text) = std::str::from_utf8(&text) else {
                    return Replayed::Cut { handed };
                };
                let unit = TableUnit::Page { page };
                sink.values(
                    path,
                    &Column {
                        names: &[],
                        text,
                        rows: &rows,
                        unit,
                    },
                );
                handed = true;
            }
            b'E' => {
                let Ok(read) = table_read(output) else {
                    return Replayed::Cut { handed };
                };
                return Replayed::Ended(Ok(read));
            }
            b'S' => {
                let Ok(skip) = skip(output) else {
                    return Replayed::Cut { handed };
                };
                return Replayed::Ended(Err(skip));
            }
            _ => return Replayed::Cut { handed },
        }
    }
}

fn byte(input: &mut impl Read) -> io::Result<u8> {
    let mut b = [0; 1];
    input.read_exact(&mut b)?;
    Ok(b[0])
}

fn number(input: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    input.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn length(input: &mut impl Read) -> io::Result<usize> {
    let n = number(input)?;
    if n > MAX_FRAME {
        return Err(io::ErrorKind::InvalidData.into());
    }
    Ok(n as usize)
}

fn run(input: &mut impl Read, text: &mut Vec<u8>, rows: &mut Vec<u64>) -> io::Result<()> {
    let n = length(input)?;
    text.clear();
    input.take(n as u64).read_to_end(text)?;
    if text.len() != n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let count = length(input)?;
    rows.clear();
    let mut b = [0; 8];
    for _ in 0..count {
        input.read_exact(&mut b)?;
        rows.push(u64::from_le_bytes(b));
    }
    Ok(())
}

fn skip(input: &mut impl Read) -> io::Result<Skip> {
    let code = byte(input)?;
    Skip::ALL
        .get(usize::from(code))
        .copied()
        .ok_or_else(|| io::ErrorKind::InvalidData.into())
}

fn table_read(input: &mut impl Read) -> io::Result<TableRead> {
    let handed = byte(input)? != 0;
    let count = byte(input)?;
    let mut skips = Vec::new();
    for _ in 0..count {
        push_once(&mut skips, skip(input)?);
    }
    Ok(TableRead { handed, skips })
}

/// The child: `args` are the ratio limit, the memory it may map beyond its start and its
/// processor seconds. Its exit status: 0 once the end frame is written, 2 for arguments it
/// does not know, 3 when its output or input failed.
fn serve(args: &[String]) -> i32 {
    let [ratio, memory, seconds] = args else {
        return 2;
    };
    let (Ok(max_ratio), Ok(memory), Ok(seconds)) = (
        ratio.parse::<u64>(),
        memory.parse::<u64>(),
        seconds.parse::<u64>(),
    ) else {
        return 2;
    };
    if cap(memory, seconds).is_err() {
        return 3;
    }
    let mut bytes = Vec::new();
    if io::stdin()
        .lock()
        .take(MAX_FILE)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return 3;
    }
    let mut out = Recorder {
        out: BufWriter::new(io::stdout().lock()),
        failed: false,
    };
    let result = parse(bytes, max_ratio, &[], &mut out);
    let Recorder { mut out, failed } = out;
    let ended = match result {
        Ok(read) => {
            let mut frame = vec![b'E', u8::from(read.handed)];
            let codes: Vec<u8> = read.skips.iter().filter_map(|s| code(*s)).collect();
            frame.push(u8::try_from(codes.len()).unwrap_or(0));
            frame.extend(codes.iter().take(usize::from(u8::MAX)));
            out.write_all(&frame)
        }
        Err(skip) => out.write_all(&[b'S', code(skip).unwrap_or(0)]),
    };
    if failed || ended.and_then(|()| out.flush()).is_err() {
        return 3;
    }
    0
}

/// Caps this process: no core file (it would hold the document), `memory` bytes of address
/// space beyond what it maps now, `seconds` of processor time (a signal at the soft cap, the
/// end at the hard one).
fn cap(memory: u64, seconds: u64) -> io::Result<()> {
    let limit = |n: u64| Rlimit {
        current: Some(n),
        maximum: Some(n),
    };
    setrlimit(Resource::Core, limit(0))?;
    setrlimit(Resource::As, limit(mapped()?.saturating_add(memory)))?;
    setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(seconds),
            maximum: Some(seconds.saturating_add(5)),
        },
    )?;
    Ok(())
}

/// The address space this process maps, in bytes (`VmSize`).
fn mapped() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| io::ErrorKind::InvalidData.into())
}

fn code(skip: Skip) -> Option<u8> {
    Skip::ALL
        .iter()
        .position(|s| *s == skip)
        .and_then(|i| u8::try_from(i).ok())
}

/// The child's sink: every run of lines written out as a frame, at once.
struct Recorder<W: Write> {
    out: W,
    failed: bool,
}

impl<W: Write> Sink for Recorder<W> {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> io::Result<()> {
        Ok(())
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        if self.failed {
            return;
        }
        let TableUnit::Page { page } = column.unit else {
            return;
        };
        let written = (|| {
            let too_long = || io::Error::from(io::ErrorKind::InvalidData);
            let text = u32::try_from(column.text.len()).map_err(|_| too_long())?;
            let rows = u32::try_from(column.rows.len()).map_err(|_| too_long())?;
            self.out.write_all(b"L")?;
            self.out.write_all(&page.to_le_bytes())?;
            self.out.write_all(&text.to_le_bytes())?;
            self.out.write_all(column.text.as_bytes())?;
            self.out.write_all(&rows.to_le_bytes())?;
            for row in column.rows {
                self.out.write_all(&row.to_le_bytes())?;
            }
            Ok::<(), io::Error>(())
        })();
        self.failed = written.is_err();
    }

    fn skipped(&mut self, _: &[String], _: Skip) {}
}
