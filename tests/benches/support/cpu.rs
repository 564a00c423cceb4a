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
        let mut cpu = Cpu {
            service: seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default()),
            ..Cpu::default()
        };
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if stat.contains("(postgres)") {
                cpu.postgres += seconds(&stat);
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
