//! `dpsctl`: the operator CLI of the Data Protection Service.
#![expect(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

mod detect;
mod receipt;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use dpsctl::{connect, dev};
use ids::TenantId;

#[derive(Debug, Parser)]
#[command(
    name = "dpsctl",
    version,
    about = "Operate the Data Protection Service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending migrations to DATABASE_URL (or the dev cluster).
    Migrate,
    /// Mint an access token signed by the dev identity key (trusted only where configured).
    DevToken {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        user: String,
        /// Comma-separated roles, for example admin,analyst.
        #[arg(long, default_value = "")]
        roles: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
    },
    /// Manage API keys.
    ApiKey {
        #[command(subcommand)]
        command: ApiKeyCommand,
    },
    /// Print diesel's schema.rs for the migrated database (DATABASE_URL or the dev cluster).
    PrintSchema,
    /// Tenant data keys: rotate, and move old entries onto the current version.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Stop (or resume) tokenize, grant and detokenize, for one tenant or for all. Every
    /// replica obeys within a second.
    KillSwitch {
        #[arg(value_enum)]
        state: Switch,
        /// Only this tenant; all tenants when omitted.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Monthly token quotas (unlimited by default).
    Quota {
        #[command(subcommand)]
        command: QuotaCommand,
    },
    /// The governance audit log: verify a tenant's chain and checkpoints.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Scan a file (or standard input) for PII: findings on stdout, a summary on stderr.
    /// Values are never printed.
    Detect(detect::Args),
    /// Remediation receipts: verify one offline against the platform's JWKS.
    Receipt {
        #[command(subcommand)]
        command: receipt::Command,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Check every entry of the tenant's log, in order, and its signed checkpoints. Exits 0 on
    /// an intact log; otherwise exits 1 naming the first seq that was changed, removed, moved
    /// or cut off past a checkpoint.
    Verify {
        #[arg(long)]
        tenant: String,
        /// The checkpoint public key, in hex (from `dpsctl audit public-key`); derived from the
        /// master key when omitted.
        #[arg(long)]
        public_key: Option<String>,
    },
    /// Print the public key that checks checkpoints, in hex, for auditors who hold no master
    /// key.
    PublicKey,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Switch {
    On,
    Off,
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Add a key version for the tenant; new writes use it, old entries still decrypt.
    Rotate {
        #[arg(long)]
        tenant: String,
    },
    /// Re-encrypt entries written under older versions with the current one.
    Rewrap {
        /// Only this tenant; every tenant with keys when omitted.
        #[arg(long)]
        tenant: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum QuotaCommand {
    /// Set a tenant's monthly token quota.
    Set {
        #[arg(long)]
        tenant: String,
        /// Tokens per calendar month.
        #[arg(long, conflicts_with = "unlimited")]
        tokens: Option<i64>,
        /// Remove the quota.
        #[arg(long)]
        unlimited: bool,
    },
    /// Show a tenant's quota.
    Show {
        #[arg(long)]
        tenant: String,
    },
}

#[derive(Debug, Subcommand)]
enum ApiKeyCommand {
    /// Create a key. The key is printed once, alone on the last line of stdout.
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long, default_value = "default")]
        name: String,
        /// The user the key acts for (per-user rate limits count against it).
        #[arg(long)]
        owner: Option<String>,
    },
    /// List keys (never the keys themselves).
    List {
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke a key by id.
    Revoke { id: uuid::Uuid },
}

fn main() -> ExitCode {
    // First, before any thread: a PDF-reading child of this program is served and exits here.
    extract::init_isolation();
    serve()
}

#[tokio::main]
async fn serve() -> ExitCode {
    let cli = Cli::parse();
    boot::init_tracing(boot::LogFormat::from_env(&boot::Env::process()).unwrap_or_default());
    match run(cli.command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dpsctl: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Migrate => {
            let database = dev::database().await?;
            let applied = db::migrate(&database.url).await?;
            println!("applied {} migration(s)", applied.len());
            for version in applied {
                println!("  {version}");
            }
            Ok(())
        }
        Command::DevToken {
            tenant,
            user,
            roles,
            ttl,
        } => {
            let tenant: TenantId = tenant.parse()?;
            let (minter, _) = dev::dev_minter()?;
            let roles: Vec<&str> = roles
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .collect();
            println!(
                "{}",
                minter.mint(tenant.as_str(), &user, &roles, Duration::from_secs(ttl))?
            );
            Ok(())
        }
        Command::ApiKey { command } => api_key(command).await,
        Command::Keys { command } => keys(command).await,
        Command::KillSwitch { state, tenant } => {
            let tenant: Option<TenantId> = tenant.map(|t| t.parse()).transpose()?;
            let database = dev::database().await?;
            db::migrate(&database.url).await?;
            let mut conn = connect(&database.url).await?;
            let on = matches!(state, Switch::On);
            let switch = if on {
                limits::Switch::On
            } else {
                limits::Switch::Off
            };
            limits::set_kill_switch(&mut conn, tenant.as_ref(), switch, "dpsctl").await?;
            let scope = tenant.map_or_else(|| "all tenants".to_owned(), |t| format!("tenant {t}"));
            println!(
                "kill switch {} for {scope}; every replica follows within a second",
                if on { "on" } else { "off" }
            );
            Ok(())
        }
        Command::Quota { command } => quota(command).await,
        Command::Audit { command } => audit_command(command).await,
        Command::Detect(args) => detect::run(args),
        Command::Receipt { command } => receipt::run(command),
        Command::PrintSchema => {
            let database = dev::database().await?;
            db::migrate(&database.url).await?;
            let mut conn = connect(&database.url).await?;
            print!("{}", db::print_schema(&mut conn).await?);
            Ok(())
        }
    }
}

async fn audit_command(command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::PublicKey => {
            let key = audit::CheckpointKey::from_master(&master_key()?);
            println!("{}", key.public().to_hex());
            Ok(())
        }
        AuditCommand::Verify { tenant, public_key } => {
            let tenant: TenantId = tenant.parse()?;
            let key = match public_key {
                Some(hex) => audit::PublicKey::from_hex(&hex)
                    .ok_or_else(|| anyhow::anyhow!("--public-key must be 64 hex digits"))?,
                None => audit::CheckpointKey::from_master(&master_key()?)
                    .public()
                    .clone(),
            };
            let database = dev::database().await?;
            let mut conn = connect(&database.url).await?;
            let started = std::time::Instant::now();
            match audit::verify(&mut conn, &tenant, &key).await? {
                Ok(verified) => {
                    let seconds = started.elapsed().as_secs_f64().max(1e-6);
                    println!(
                        "audit log of tenant {tenant} is intact: {} entries and {} checkpoints \
                         verified in {seconds:.2} s ({:.0} entries/s)",
                        verified.entries,
                        verified.checkpoints,
                        verified.entries as f64 / seconds
                    );
                    Ok(())
                }
                Err(broken) => anyhow::bail!(
                    "audit log of tenant {tenant} is not intact: first bad seq {}: {}",
                    broken.seq,
                    broken.reason
                ),
            }
        }
    }
}

/// The master key the services use: `DPS_MASTER_KEY`, `DPS_MASTER_KEY_FILE`, or else the dev
/// key that the dev stack made.
fn master_key() -> anyhow::Result<keys::MasterKey> {
    let env = boot::Env::process();
    let dev_file =
        if env.get("DPS_MASTER_KEY").is_none() && env.get("DPS_MASTER_KEY_FILE").is_none() {
            Some(dev::dev_master_key_file()?.to_string_lossy().into_owned())
        } else {
            None
        };
    let lookup = |name: &str| match name {
        "DPS_MASTER_KEY_FILE" if dev_file.is_some() => dev_file.clone(),
        _ => boot::process_env(name),
    };
    Ok(keys::MasterKey::from_env(&boot::Env::new(&lookup))?)
}

async fn keys(command: KeysCommand) -> anyhow::Result<()> {
    let master = std::sync::Arc::new(master_key()?);
    let database = dev::database().await?;
    db::migrate(&database.url).await?;
    let mut conn = connect(&database.url).await?;
    match command {
        KeysCommand::Rotate { tenant } => {
            let tenant: TenantId = tenant.parse()?;
            let version = keys::add_version(&mut conn, &master, &tenant).await?;
            println!("tenant {tenant}: key version {version} now encrypts new entries");
            println!(
                "in 30 s, once every process has reloaded the tenant's keys, run \
                 `dpsctl keys rewrap --tenant {tenant}` to move older entries onto it"
            );
        }
        KeysCommand::Rewrap { tenant } => {
            let keyring = keys::KeyRing::new(master);
            let tenants = match tenant {
                Some(t) => vec![t.parse::<TenantId>()?],
                None => keys::tenants(&mut conn).await?,
            };
            for tenant in tenants {
                let moved = vault::rewrap::rewrap(&mut conn, &keyring, &tenant).await?;
                println!("tenant {tenant}: {moved} entries re-encrypted under the current key");
            }
        }
    }
    Ok(())
}

async fn quota(command: QuotaCommand) -> anyhow::Result<()> {
    let database = dev::database().await?;
    db::migrate(&database.url).await?;
    let mut conn = connect(&database.url).await?;
    match command {
        QuotaCommand::Set {
            tenant,
            tokens,
            unlimited,
        } => {
            let tenant: TenantId = tenant.parse()?;
            let tokens = match (tokens, unlimited) {
                (Some(n), false) if n >= 0 => Some(n),
                (None, true) => None,
                _ => anyhow::bail!("give --tokens N (0 or more) or --unlimited"),
            };
            limits::set_monthly_quota(&mut conn, &tenant, tokens).await?;
            match tokens {
                Some(n) => println!("tenant {tenant}: {n} tokens per month"),
                None => println!("tenant {tenant}: unlimited"),
            }
        }
        QuotaCommand::Show { tenant } => {
            let tenant: TenantId = tenant.parse()?;
            match limits::monthly_quota(&mut conn, &tenant).await? {
                Some(n) => println!("tenant {tenant}: {n} tokens per month"),
                None => println!("tenant {tenant}: unlimited"),
            }
        }
    }
    Ok(())
}

async fn api_key(command: ApiKeyCommand) -> anyhow::Result<()> {
    let database = dev::database().await?;
    db::migrate(&database.url).await?;
    let mut conn = connect(&database.url).await?;
    match command {
        ApiKeyCommand::Create {
            tenant,
            name,
            owner,
        } => {
            let tenant: TenantId = tenant.parse()?;
            let (record, secret) =
                auth::api_keys::create(&mut conn, &tenant, owner.as_deref(), &name).await?;
            println!(
                "created API key {} for tenant {} (name: {})",
                record.id, record.tenant_id, record.name
            );
            println!("store it now: it is shown once and cannot be recovered");
            println!("{}", secret.expose());
        }
        ApiKeyCommand::List { tenant } => {
            let tenant: Option<TenantId> = tenant.map(|t| t.parse()).transpose()?;
            let keys = auth::api_keys::list(&mut conn, tenant.as_ref()).await?;
            println!(
                "{:<36}  {:<16}  {:<20}  {:<10}  CREATED",
                "ID", "TENANT", "NAME", "STATUS"
            );
            for key in keys {
                let status = if key.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                println!(
                    "{:<36}  {:<16}  {:<20}  {:<10}  {}",
                    key.id,
                    key.tenant_id,
                    key.name,
                    status,
                    key.created_at
                        .format(&time::format_description::well_known::Rfc3339)?
                );
            }
        }
        ApiKeyCommand::Revoke { id } => match auth::api_keys::revoke(&mut conn, id).await? {
            Some(key) => println!("revoked API key {} (tenant {})", key.id, key.tenant_id),
            None => anyhow::bail!("no API key with id {id}"),
        },
    }
    Ok(())
}
