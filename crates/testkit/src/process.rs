//! A service binary run as operators run it, with its stderr captured line by line.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running service binary.
#[derive(Debug)]
pub struct ServiceProcess {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
    /// `http://127.0.0.1:PORT`, read from the binary's JSON `listening` line.
    pub origin: String,
}

impl ServiceProcess {
    /// Starts `binary` with exactly `env` (plus `PATH`), `LOG_FORMAT=json` and
    /// `BIND_ADDR=127.0.0.1:0`, and waits for its `listening` line.
    pub fn start(binary: &str, env: &HashMap<String, String>) -> Self {
        let mut child = Command::new(binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env)
            .env("LOG_FORMAT", "json")
            .env("BIND_ADDR", "127.0.0.1:0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let (addr_tx, addr_rx) = mpsc::channel::<String>();
        let stderr = child
            .stderr
            .take()
            .unwrap_or_else(|| panic!("no stderr pipe"));
        let collected = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line)
                    && event["message"] == "listening"
                {
                    let _ = addr_tx.send(event["addr"].as_str().unwrap_or_default().to_owned());
                }
                if let Ok(mut lines) = collected.lock() {
                    lines.push(line);
                }
            }
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!(
                    "{binary} never logged `listening`: {:?}",
                    lines.lock().map(|l| l.clone())
                )
            });
        Self {
            child,
            lines,
            reader: Some(reader),
            origin: format!("http://{addr}"),
        }
    }

    /// Sends SIGTERM, waits for the exit, and returns the exit status and every log line.
    pub fn stop(mut self) -> (ExitStatus, Vec<String>) {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(killed.success(), "kill failed");
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("cannot wait for the service: {e}"));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let lines = self.lines.lock().map(|l| l.clone()).unwrap_or_default();
        (status, lines)
    }

    /// The process id, to read its memory from `/proc`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory now, in bytes (`VmRSS` of `/proc/<pid>/status`).
    pub fn resident_bytes(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    }

    /// The `http://` origin of the metrics endpoint, from the `metrics listening` log line
    /// (written before `listening`), when `METRICS_BIND_ADDR` was set.
    pub fn metrics_origin(&self) -> Option<String> {
        let lines = self.lines.lock().ok()?;
        lines.iter().find_map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).ok()?;
            (event["message"] == "metrics listening")
                .then(|| format!("http://{}", event["addr"].as_str().unwrap_or_default()))
        })
    }

    /// Waits for the process to end by itself (an abort, a crash) within `timeout`, and returns
    /// the exit status and every log line. Panics, killing it, if it is still running then.
    pub fn exited(mut self, timeout: Duration) -> (ExitStatus, Vec<String>) {
        let deadline = std::time::Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Ok(None) => {
                    let lines = self.lines.lock().map(|l| l.clone()).unwrap_or_default();
                    panic!("the service did not exit within {timeout:?}: {lines:#?}");
                }
                Err(e) => panic!("cannot wait for the service: {e}"),
            }
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let lines = self.lines.lock().map(|l| l.clone()).unwrap_or_default();
        (status, lines)
    }
}

impl Drop for ServiceProcess {
    /// A test that fails midway leaves no service running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Every secret in `secrets` (at least 8 characters each) that appears in any of `lines`.
///
/// A secret that starts or ends with a digit counts only where no further digit extends it
/// on that side: `219099999` inside `256.15219099999996` (a request's timing) is another
/// number, not the value, while `ssn=219099999,` is the value.
pub fn leaks<'a>(lines: &[String], secrets: &[&'a str]) -> Vec<(&'a str, String)> {
    let mut found = Vec::new();
    for line in lines {
        for secret in secrets.iter().filter(|s| s.len() >= 8) {
            if contains_whole(line, secret) {
                found.push((*secret, line.clone()));
            }
        }
    }
    found
}

fn contains_whole(line: &str, secret: &str) -> bool {
    let digit_at = |s: &str, first: bool| {
        let c = if first {
            s.chars().next()
        } else {
            s.chars().next_back()
        };
        c.is_some_and(|c| c.is_ascii_digit())
    };
    let (leads, trails) = (digit_at(secret, true), digit_at(secret, false));
    // Every occurrence, overlapping ones included.
    let mut from = 0;
    while let Some(offset) = line[from..].find(secret) {
        let at = from + offset;
        let (before, after) = (&line[..at], &line[at + secret.len()..]);
        let extended = leads && digit_at(before, false) || trails && digit_at(after, true);
        if !extended {
            return true;
        }
        from = at + secret.chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::leaks;

    #[test]
    fn a_value_counts_as_itself_not_inside_a_longer_number() {
        let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ssn = "219099999";
        // Inside a request's timing: another number.
        assert!(leaks(&lines(&[r#""elapsed_ms":256.15219099999996"#]), &[ssn]).is_empty());
        // The value itself, however delimited.
        for line in [
            "ssn=219099999",
            "\"219099999\"",
            "x219099999y",
            "219099999",
            "a 2190999999 219099999 b",
        ] {
            assert_eq!(leaks(&lines(&[line]), &[ssn]).len(), 1, "{line}");
        }
        // A value that does not start or end with a digit is found anywhere.
        assert_eq!(
            leaks(&lines(&["1ann.lee@example.com2"]), &["ann.lee@example.com"]).len(),
            1
        );
    }
}
