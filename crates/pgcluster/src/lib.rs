#![doc = include_str!("../README.md")]

use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// What to install when the server binaries are missing. Shown verbatim to the operator.
pub const INSTALL_HINT: &str = "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH \
or under /usr/lib/postgresql/*/bin. Install them, for example: Debian/Ubuntu `apt-get install \
postgresql`; Fedora `dnf install postgresql-server`; macOS `brew install postgresql@16`. \
Or set DATABASE_URL to an existing server.";

/// The superuser every local cluster is created with.
const SUPERUSER: &str = "dps";
/// The system account server commands run as when this process is root.
const SERVICE_ACCOUNT: &str = "postgres";

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{INSTALL_HINT}")]
    BinariesNotFound,
    #[error(
        "running as root, but there is no `{SERVICE_ACCOUNT}` user to run PostgreSQL as \
         (initdb refuses root); create one with `useradd --system {SERVICE_ACCOUNT}`"
    )]
    NoServiceAccount,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed: {output}")]
    Command { command: String, output: String },
    #[error("the cluster state file {0} is unreadable: {1}")]
    State(PathBuf, String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Io { what, source }
}

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
#[derive(Debug, Clone)]
pub struct ServerBinaries {
    dir: PathBuf,
}

impl ServerBinaries {
    /// Finds the server binaries: on `PATH` first, else the newest `/usr/lib/postgresql/*/bin`.
    pub fn locate() -> Result<Self, ClusterError> {
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                    return Ok(Self { dir });
                }
            }
        }
        let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
                let bin = entry.path().join("bin");
                (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
                    .then_some((version, bin))
            })
            .collect();
        versions.sort();
        versions
            .pop()
            .map(|(_, dir)| Self { dir })
            .ok_or(ClusterError::BinariesNotFound)
    }

    /// The path of a tool of this installation (`pg_ctl`, `pg_dump`). When the binaries were
    /// found through symlinks on `PATH` that do not include the tool, it is looked up beside
    /// the real `initdb`.
    pub fn tool(&self, name: &str) -> PathBuf {
        let direct = self.dir.join(name);
        if direct.is_file() {
            return direct;
        }
        fs::canonicalize(self.dir.join("initdb"))
            .ok()
            .and_then(|real| real.parent().map(|dir| dir.join(name)))
            .filter(|p| p.is_file())
            .unwrap_or(direct)
    }
}

/// How a cluster trades durability for speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Durability {
    /// fsync on: a development cluster whose data persists across runs.
    Durable,
    /// fsync and full-page writes off: a throwaway test cluster.
    Disposable,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    port: u16,
    password: String,
}

/// A local PostgreSQL cluster living in one directory: `data/` plus `state.json`.
pub struct Cluster {
    root: PathBuf,
    binaries: ServerBinaries,
    run_as: Option<&'static str>,
    state: State,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("root", &self.root)
            .field("port", &self.state.port)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Opens the cluster in `root`, creating it with `initdb` when it does not exist yet.
    pub fn open_or_init(root: &Path, durability: Durability) -> Result<Self, ClusterError> {
        let binaries = ServerBinaries::locate()?;
        let run_as = service_account()?;
        fs::create_dir_all(root).map_err(io(format!("creating {}", root.display())))?;
        let state_path = root.join("state.json");
        let data = root.join("data");
        if data.join("PG_VERSION").is_file() && state_path.is_file() {
            let text = fs::read_to_string(&state_path).map_err(io("reading cluster state"))?;
            let state: State = serde_json::from_str(&text)
                .map_err(|e| ClusterError::State(state_path.clone(), e.to_string()))?;
            return Ok(Self {
                root: root.to_owned(),
                binaries,
                run_as,
                state,
            });
        }
        // A half-made cluster (initdb interrupted) is started over.
        if data.exists() {
            fs::remove_dir_all(&data).map_err(io("removing a half-made cluster"))?;
        }
        let state = State {
            port: free_port()?,
            password: random_password()?,
        };
        let cluster = Self {
            root: root.to_owned(),
            binaries,
            run_as,
            state,
        };
        cluster.initdb(durability)?;
        write_private(
            &state_path,
            &serde_json::to_vec(&cluster.state).unwrap_or_default(),
        )?;
        Ok(cluster)
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn initdb(&self, durability: Durability) -> Result<(), ClusterError> {
        let data = self.data_dir();
        fs::create_dir_all(&data).map_err(io("creating the data directory"))?;
        fs::set_permissions(&data, fs::Permissions::from_mode(0o700))
            .map_err(io("restricting the data directory"))?;
        let pwfile = self.root.join("initdb.pw");
        write_private(&pwfile, self.state.password.as_bytes())?;
        self.give_to_service_account(&data)?;
        self.give_to_service_account(&pwfile)?;
        let mut cmd = self.server_command("initdb");
        cmd.arg("-D")
            .arg(&data)
            .args([
                "-U",
                SUPERUSER,
                "-A",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
            ])
            .arg(format!("--pwfile={}", pwfile.display()));
        if durability == Durability::Disposable {
            cmd.arg("--no-sync");
        }
        let result = run(cmd);
        let _ = fs::remove_file(&pwfile);
        result?;

        let mut settings = String::from(
            "\n# Added by pgcluster: loopback only, no Unix socket.\n\
             listen_addresses = '127.0.0.1'\n\
             unix_socket_directories = ''\n\
             max_connections = 300\n",
        );
        if durability == Durability::Disposable {
            settings.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .and_then(|mut f| f.write_all(settings.as_bytes()))
            .map_err(io("configuring the cluster"))?;
        Ok(())
    }

    /// Starts the server unless it is already running. A dev cluster whose port was taken by
    /// something else in the meantime moves to a free one.
    pub fn start(&mut self) -> Result<(), ClusterError> {
        if self.is_running() {
            return Ok(());
        }
        if TcpListener::bind(("127.0.0.1", self.state.port)).is_err() {
            self.state.port = free_port()?;
            write_private(
                &self.root.join("state.json"),
                &serde_json::to_vec(&self.state).unwrap_or_default(),
            )?;
        }
        let log = self.data_dir().join("server.log");
        let mut cmd = self.server_command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data_dir())
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-o"])
            .arg(format!("-p {}", self.state.port))
            .arg("start");
        run(cmd).map_err(|e| match fs::read_to_string(&log) {
            Ok(text) => ClusterError::Command {
                command: "pg_ctl start".into(),
                output: format!("{e}; server log tail: {}", tail(&text, 2000)),
            },
            Err(_) => e,
        })
    }

    /// Whether a server is running on this cluster's data directory.
    pub fn is_running(&self) -> bool {
        let mut cmd = self.server_command("pg_ctl");
        cmd.arg("-D").arg(self.data_dir()).arg("status");
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd.status().map(|s| s.success()).unwrap_or(false)
    }

    /// Stops the server, letting clients finish their transactions ("fast" shutdown).
    pub fn stop(&self) -> Result<(), ClusterError> {
        if !self.is_running() {
            return Ok(());
        }
        let mut cmd = self.server_command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data_dir())
            .args(["-m", "fast", "-w", "stop"]);
        run(cmd)
    }

    /// Stops the server as a crash would ("immediate" shutdown: no checkpoint, every client cut
    /// off); the next start recovers from the WAL. For fault tests.
    pub fn crash(&self) -> Result<(), ClusterError> {
        let mut cmd = self.server_command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data_dir())
            .args(["-m", "immediate", "-w", "stop"]);
        run(cmd)
    }

    /// Starts a detached reaper that waits for process `pid` to end, then stops the server and
    /// deletes the whole cluster directory. It runs in its own process group, so a Ctrl-C that
    /// kills the owner does not kill the reaper.
    pub fn remove_when_process_exits(&self, pid: u32) -> Result<(), ClusterError> {
        let stop = shell_quote_command(&self.server_command_line(
            "pg_ctl",
            &[
                "-D",
                &self.data_dir().to_string_lossy(),
                "-m",
                "immediate",
                "stop",
            ],
        ));
        let cleanup = format!(
            "{stop} >/dev/null 2>&1; rm -rf {root}",
            root = shell_quote(&self.root.to_string_lossy()),
        );
        run_when_process_exits(pid, &cleanup).map_err(io("starting the cluster reaper"))
    }

    /// The port the server listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.state.port
    }

    /// A connection URL for `database` as the cluster superuser.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}",
            self.state.password, self.state.port
        )
    }

    fn server_command_line(&self, tool: &str, args: &[&str]) -> Vec<String> {
        let mut line = Vec::new();
        if let Some(user) = self.run_as {
            line.extend([
                "runuser".to_owned(),
                "-u".to_owned(),
                user.to_owned(),
                "--".to_owned(),
            ]);
        }
        line.push(self.binaries.tool(tool).to_string_lossy().into_owned());
        line.extend(args.iter().map(|a| (*a).to_owned()));
        line
    }

    fn server_command(&self, tool: &str) -> Command {
        let line = self.server_command_line(tool, &[]);
        let mut cmd = Command::new(&line[0]);
        cmd.args(&line[1..]);
        // The server must not inherit a client's idea of where to connect.
        cmd.env_remove("PGHOST")
            .env_remove("PGPORT")
            .env_remove("PGDATA");
        cmd
    }

    fn give_to_service_account(&self, path: &Path) -> Result<(), ClusterError> {
        let Some(user) = self.run_as else {
            return Ok(());
        };
        let mut cmd = Command::new("chown");
        cmd.arg(format!("{user}:")).arg(path);
        run(cmd)
    }

    /// Whether the service account can reach `dir` (every ancestor must be searchable).
    pub fn service_account_can_reach(dir: &Path) -> bool {
        match service_account() {
            Ok(None) => true,
            Ok(Some(user)) => Command::new("runuser")
                .args(["-u", user, "--", "test", "-x"])
                .arg(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false),
            Err(_) => false,
        }
    }
}

/// `Some("postgres")` when this process is root (initdb refuses root), else `None`.
fn service_account() -> Result<Option<&'static str>, ClusterError> {
    // The owner of /proc/self is the effective user id, which avoids unsafe libc calls.
    let euid = fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    if euid != 0 {
        return Ok(None);
    }
    let exists = Command::new("id")
        .args(["-u", SERVICE_ACCOUNT])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if exists {
        Ok(Some(SERVICE_ACCOUNT))
    } else {
        Err(ClusterError::NoServiceAccount)
    }
}

fn run(mut cmd: Command) -> Result<(), ClusterError> {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!("running {:?}", cmd.get_program())))?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    Err(ClusterError::Command {
        command: format!("{:?}", cmd.get_program()),
        output: tail(&text, 2000).to_owned(),
    })
}

fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ClusterError> {
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(io(format!("writing {}", path.display())))
}

/// Asks the kernel for a free loopback port. Another process could take it before the server
/// binds it; `start` then fails with the server's own message and a retry picks a new one.
fn free_port() -> Result<u16, ClusterError> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(io("finding a free port"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(io("finding a free port"))
}

fn random_password() -> Result<String, ClusterError> {
    let mut bytes = [0u8; 24];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(io("reading /dev/urandom"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Starts a detached reaper that waits for process `pid` to end, then runs the shell command
/// `cleanup`. It runs in its own process group, so a Ctrl-C that kills the owner does not kill
/// the reaper.
pub fn run_when_process_exits(pid: u32, cleanup: &str) -> std::io::Result<()> {
    let script = format!("while kill -0 {pid} 2>/dev/null; do sleep 0.2; done; {cleanup}");
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(())
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn shell_quote_command(line: &[String]) -> String {
    line.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_survives_single_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }

    #[test]
    fn tail_respects_char_boundaries() {
        assert_eq!(tail("héllo", 4), "llo");
        assert_eq!(tail("abc", 10), "abc");
    }
}
