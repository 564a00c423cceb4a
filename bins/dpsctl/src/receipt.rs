//! `dpsctl receipt verify`: check a remediation receipt offline, as a customer would, with the
//! document and the platform's JWKS only (no database, no master key).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use receipts::{PublicKey, SignedReceipt, Verified, VerifyError};
use serde_json::Value;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check a signed receipt against the platform's JWKS (GET /governance/receipt-keys).
    /// Prints one line and exits 0 when the platform signature verifies; prints the reason and
    /// exits 1 when it does not.
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The signed receipt document (`{"receipt": …, "signatures": […]}`); `-` reads standard
    /// input.
    file: PathBuf,
    /// The platform's receipt keys, as a JWKS file: the answer of GET
    /// /governance/receipt-keys as it is (the envelope's `data`), or the bare JWKS.
    #[arg(long)]
    jwks: PathBuf,
    /// The tenant co-signer's keys, as a JWKS file: the receipt must then carry a co-signature,
    /// and it is checked too.
    #[arg(long)]
    cosigner_jwks: Option<PathBuf>,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Verify(args) => verify(&args),
    }
}

fn verify(args: &VerifyArgs) -> anyhow::Result<()> {
    let document = read_json(&args.file)?;
    let jwks = unwrap_envelope(read_json(&args.jwks)?);
    let cosigner_jwks = args.cosigner_jwks.as_deref().map(read_json).transpose()?;
    // Named in every message: the id when the document has one, else the file.
    let name = SignedReceipt::from_value(&document).map_or_else(
        |_| args.file.display().to_string(),
        |d| d.receipt_id().escape_debug().to_string(),
    );
    let verified = receipts::verify(&document, &jwks)
        .map_err(|e| anyhow::anyhow!("receipt {name}: invalid: {e}"))?;
    let cosignature = match &cosigner_jwks {
        None => unchecked(&verified),
        Some(keys) => check_cosignature(&document, &verified, keys)
            .map_err(|e| anyhow::anyhow!("receipt {name}: invalid co-signature: {e}"))?,
    };
    println!(
        "receipt {name}: valid, signed by {}; {cosignature}",
        verified.kid
    );
    Ok(())
}

/// The `data` of an Area B envelope (`{"status": "success", "data": …}`), or the value itself.
fn unwrap_envelope(value: Value) -> Value {
    match value {
        Value::Object(mut map) if map.contains_key("status") && map.contains_key("data") => {
            map.remove("data").unwrap_or(Value::Null)
        }
        other => other,
    }
}

fn unchecked(verified: &Verified) -> String {
    match &verified.cosigner_kid {
        None => "no co-signature".to_owned(),
        Some(kid) => format!(
            "co-signature by {} present, not checked (give --cosigner-jwks)",
            kid.escape_debug()
        ),
    }
}

fn check_cosignature(
    document: &Value,
    verified: &Verified,
    keys: &Value,
) -> Result<String, VerifyError> {
    let kid = verified
        .cosigner_kid
        .as_deref()
        .ok_or(VerifyError::NoCosignature)?;
    let key = PublicKey::find_in_jwks(keys, kid)?
        .ok_or_else(|| VerifyError::UnknownKid(kid.to_owned()))?;
    receipts::verify_cosignature(document, &key)?;
    Ok(format!("co-signed by {}, valid", kid.escape_debug()))
}

/// A file, or standard input for `-`, read as JSON with no member name twice.
fn read_json(path: &Path) -> anyhow::Result<Value> {
    let bytes = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading standard input")?;
        bytes
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))?
    };
    receipts::parse_json(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))
}
