//! chromedriver as a process of the test: found, started on a free loopback port, asked for
//! Chromium sessions, and killed with every Chromium it started.

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where Debian's `chromium-driver` package puts chromedriver.
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Where Debian's `chromium` package puts its launcher (a script that sets Debian's flags, then
/// runs `/usr/lib/chromium/chromium`).
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long chromedriver may take to answer `/status`, and a session to end.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A chromedriver process. Cloning shares it; the last clone dropped (every
/// [`Browser`](super::Browser) holds one) kills it and every Chromium it started, which share its process group. A reaper kills
/// them too if the test process ends without dropping it.
#[derive(Debug, Clone)]
pub struct ChromeDriver {
    process: Arc<DriverProcess>,
}

#[derive(Debug)]
struct DriverProcess {
    child: Child,
    port: u16,
    chromium: PathBuf,
    /// Holds chromedriver's own log (`chromedriver.log`), shown when a start fails.
    dir: tempfile::TempDir,
}

impl ChromeDriver {
    /// Starts chromedriver (`CHROMEDRIVER`, else `/usr/bin/chromedriver`) for Chromium
    /// (`CHROMIUM`, else `/usr/bin/chromium`) on a free loopback port and waits until it is
    /// ready. Panics, naming the Debian packages to install, when either is missing: a browser
    /// test never skips.
    pub fn start() -> Self {
        let chromedriver = locate(
            "CHROMEDRIVER",
            std::env::var_os("CHROMEDRIVER"),
            CHROMEDRIVER,
        )
        .unwrap_or_else(|message| panic!("{message}"));
        let chromium = locate("CHROMIUM", std::env::var_os("CHROMIUM"), CHROMIUM)
            .unwrap_or_else(|message| panic!("{message}"));
        let dir = tempfile::Builder::new()
            .prefix("dps-chromedriver-")
            .tempdir()
            .unwrap_or_else(|e| panic!("creating chromedriver's directory: {e}"));
        // The port is free when chosen, not when bound: another process may take it first, and
        // chromedriver then exits at once. Another port is tried.
        let mut failures = Vec::new();
        for _ in 0..3 {
            let port = crate::emulators::free_port();
            match spawn(&chromedriver, port, dir.path()) {
                Ok(child) => {
                    return Self {
                        process: Arc::new(DriverProcess {
                            child,
                            port,
                            chromium,
                            dir,
                        }),
                    };
                }
                Err(failure) => failures.push(failure),
            }
        }
        panic!(
            "chromedriver ({}) did not start: {}",
            chromedriver.display(),
            failures.join("; ")
        );
    }

    /// `http://127.0.0.1:PORT/`, chromedriver's WebDriver endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.process.port)
    }

    /// The Chromium binary its sessions run.
    pub(super) fn chromium(&self) -> &Path {
        &self.process.chromium
    }

    /// The end of chromedriver's log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.process.dir.path().join("chromedriver.log"))
    }

    /// Ends a session without the async client, for a [`Browser`](super::Browser) dropped
    /// without being closed: Chromium exits before its profile directory is removed. Best effort.
    pub(super) fn delete_session_blocking(&self, session_id: &str) {
        if session_id.is_empty() {
            return;
        }
        let port = self.process.port;
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            return;
        };
        let _ = stream.set_read_timeout(Some(START_TIMEOUT));
        let request = format!(
            "DELETE /session/{session_id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n"
        );
        if stream.write_all(request.as_bytes()).is_ok() {
            // chromedriver answers once Chromium has quit, and keeps the connection open: the
            // answer's first bytes are the signal, not the end of the stream.
            let _ = stream.read(&mut [0u8; 512]);
        }
    }
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        // The whole group: chromedriver and every Chromium process it started (they stay in its
        // group; Chromium's crash handler, which leaves it, exits with the browser).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts chromedriver on `port` in a process group of its own and waits for `/status` to
/// answer 200. On failure, returns what went wrong with its log.
fn spawn(chromedriver: &Path, port: u16, dir: &Path) -> Result<Child, String> {
    let log_path = dir.join("chromedriver.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("opening {}: {e}", log_path.display()))?;
    let mut child = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("running {}: {e}", chromedriver.display()))?;
    let kill = format!("kill -KILL -- -{} 2>/dev/null", child.id());
    let _ = pgcluster::run_when_process_exits(std::process::id(), &kill);
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "it exited ({status}) on port {port}; its log:\n{}",
                tail(&log_path)
            ));
        }
        if crate::emulators::http_status(port, "/status") == Some(200) {
            return Ok(child);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "it did not answer on port {port} within {START_TIMEOUT:?}; its log:\n{}",
                tail(&log_path)
            ));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The executable a browser test needs: the path in `variable` when set, else `default`. An
/// error names the Debian packages, so that a machine without them fails with what to do.
pub(super) fn locate(
    variable: &str,
    value: Option<OsString>,
    default: &str,
) -> Result<PathBuf, String> {
    let path = value
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from);
    let executable = std::fs::metadata(&path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
    if executable {
        Ok(path)
    } else {
        Err(format!(
            "the browser tests need Chromium and ChromeDriver, and {} is not an executable \
             (set {variable} to use another). Install Debian's packages: \
             `apt-get install chromium chromium-driver`",
            path.display()
        ))
    }
}

/// Whether this process runs as root (its effective user id, from `/proc/self/status`).
pub(super) fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1))
                .map(|effective| effective == "0")
        })
        .unwrap_or(false)
}

/// The last 4 000 characters of a log file.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(4000);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}
