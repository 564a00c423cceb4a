//! CPU time per process group, read from /proc: what the benchmarks report beside their rates,
//! to say where the cores went.

/// CPU seconds used so far (user and system) by this process, which runs platform-api, by
/// every Postgres process and by moto, from /proc.
#[derive(Debug, Default)]
pub struct Cpu {
    pub service: f64,
    pub postgres: f64,
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
            } else if stat.contains("(moto_server)") {
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

/// Gives moto scheduling priority over everything else of the benchmark (nice -10), for the
/// raw reference and the measured run alike, so that both get the same share of the machine:
/// the emulator stands in for storage on other machines, which the scanning host's own work
/// never slows down. Without it, whichever of the service or Postgres the scheduler puts on
/// moto's core stalls the storage, and the ratio measures the scheduler. (Pinning moto to a
/// core of its own was tried: it leaves the service and Postgres one core between them, which
/// the scan outgrows.) `BENCH_PRIORITY=0`, or a process not allowed to raise priority, leaves
/// scheduling alone. Returns whether moto was given priority.
pub fn prioritize_storage() -> bool {
    if std::env::var("BENCH_PRIORITY").is_ok_and(|v| v == "0") {
        return false;
    }
    let mut raised = false;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if stat.contains("(moto_server)") {
            // Every thread of the process: renice acts on one task id at a time.
            for task in std::fs::read_dir(entry.path().join("task"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let status = std::process::Command::new("renice")
                    .args(["-n", "-10", "-p"])
                    .arg(task.file_name())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
                raised |= matches!(status, Ok(s) if s.success());
            }
        }
    }
    raised
}
