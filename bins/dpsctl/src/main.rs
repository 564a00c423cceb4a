//! `dpsctl`: the operator CLI of the Data Protection Service.
#![expect(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

mod dev;
mod up;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use auth::TenantId;
use clap::{Parser, Subcommand};

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
    /// Start the whole system locally: Postgres (unless DATABASE_URL is set), migrations and
    /// both services. Ctrl-C stops everything.
    Up,
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

#[actix_web::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    dps_http::init_tracing(dps_http::LogFormat::from_env().unwrap_or_default());
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
        Command::Up => up::up().await,
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
        Command::PrintSchema => {
            let database = dev::database().await?;
            db::migrate(&database.url).await?;
            let mut conn = connect(&database.url).await?;
            print!("{}", db::print_schema(&mut conn).await?);
            Ok(())
        }
    }
}

async fn connect(url: &str) -> anyhow::Result<db::AsyncPgConnection> {
    use diesel_async::AsyncConnection as _;
    db::AsyncPgConnection::establish(url)
        .await
        .context("connecting to the database")
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
