//! CPU time per process group, read from /proc: what the benchmarks report beside their rates,
//! to say where the cores went.

/// CPU seconds used so far (user and system) by this process, which runs platform-api, by
/// every Postgres process and by moto, from /proc.
#[derive(Debug, Default)]
pub struct Cpu {
    pub service: f64,
    pub postgres: f64,
    /// The storage emulator: moto, or s3s-fs.
    pub moto: f64,
}

impl Cpu {
    pub fn now() -> Self {
        let seconds = |stat: &str| {
            // The fields after the parenthesised command; utime and stime are the 12th and
            // 13th of them, in clock ticks of 1/100 s.
            let rest = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
            (ticks(11).unwrap_or(0) + ticks(12).unwrap_or(0)) as f64 / 100.0
        };
        let children = |stat: &str| {
            // cutime and cstime, the 14th and 15th fields after the command.
            let rest = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
            (ticks(13).unwrap_or(0) + ticks(14).unwrap_or(0)) as f64 / 100.0
        };
        let mut cpu = Cpu {
            service: seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default()),
            ..Cpu::default()
        };
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if stat.contains("(postgres)") {
                // With the time of exited children, which the postmaster reaps: a backend
                // whose connection closed before this reading still counts.
                cpu.postgres += seconds(&stat) + children(&stat);
            } else if stat.contains("(moto_server)") || stat.contains("(s3s-fs)") {
                cpu.moto += seconds(&stat);
            }
        }
        cpu
    }

    pub fn minus(&self, earlier: &Cpu) -> Cpu {
        Cpu {
            service: self.service - earlier.service,
            postgres: self.postgres - earlier.postgres,
            moto: self.moto - earlier.moto,
        }
    }
}

/// How moto was given priority over the rest of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// A real-time policy (`SCHED_FIFO` 1): moto runs whenever it is ready.
    RealTime,
    /// nice -10: moto is favoured, but a busy core still delays its wake-ups.
    Nice,
    /// None (`BENCH_PRIORITY=0`, or a process not allowed to raise priority).
    None,
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Priority::RealTime => "moto at SCHED_FIFO 1 for the references and the measured run",
            Priority::Nice => "moto at nice -10 for the references and the measured run",
            Priority::None => "none (BENCH_PRIORITY=0, or not allowed)",
        })
    }
}

/// Gives moto scheduling priority over everything else of the benchmark, for the raw
/// reference and the measured run alike, so that both give the storage the same share of the
/// machine: the emulator stands in for storage on other machines, which the scanning host's
/// own work never slows down. Without it, whichever of the service or Postgres the scheduler
/// puts on moto's core stalls the storage, and the ratio measures the scheduler.
///
/// A real-time policy first (`SCHED_FIFO` at the lowest priority, on every thread; threads
/// moto starts later inherit it). nice -10, used before, still let moto's one interpreter
/// thread wait behind the service and Postgres on a busy core: sampled every half second,
/// moto used 1.05 cores during a raw run and 0.82 during a scan. Moto is one core at most (its
/// interpreter lock), and the kernel's real-time throttling keeps 5% of each core for the
/// rest, so nothing starves. nice -10 is the fallback where real-time scheduling is refused.
/// (Pinning moto to a core of its own was tried: it leaves the service and Postgres one core
/// between them, which the scan outgrows.) `BENCH_PRIORITY=0` leaves scheduling alone.
pub fn prioritize_storage() -> Priority {
    if std::env::var("BENCH_PRIORITY").is_ok_and(|v| v == "0") {
        return Priority::None;
    }
    let moto: Vec<std::path::PathBuf> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            std::fs::read_to_string(path.join("stat"))
                .is_ok_and(|stat| stat.contains("(moto_server)"))
        })
        .collect();
    // Each command acts on one task id at a time. A request's thread may end before its turn;
    // the threads that matter are the process's first, which accepts connections and starts
    // every later thread with its own policy, and those alive for the whole run.
    let all = |program: &str, args: &[&str]| {
        !moto.is_empty()
            && moto.iter().all(|process| {
                let mut main = false;
                for task in std::fs::read_dir(process.join("task"))
                    .into_iter()
                    .flatten()
                {
                    let Ok(task) = task else { continue };
                    let done = std::process::Command::new(program)
                        .args(args)
                        .arg(task.file_name())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status()
                        .is_ok_and(|s| s.success());
                    if Some(task.file_name().as_os_str()) == process.file_name() {
                        main = done;
                    }
                }
                main
            })
    };
    if all("chrt", &["--fifo", "-p", "1"]) {
        Priority::RealTime
    } else if all("renice", &["-n", "-10", "-p"]) {
        Priority::Nice
    } else {
        Priority::None
    }
}
