//! An S3 bucket's posture, from five configuration reads of the bucket: GetBucketPolicyStatus,
//! GetBucketAcl, GetPublicAccessBlock, GetBucketEncryption and GetBucketVersioning, each signed
//! like every other S3 call (`sigv4`) and addressed path-style, as object_store addresses the
//! bucket.
//!
//! A read the connector's role may not make (`AccessDenied`) or the service does not implement
//! leaves its field unknown; it never fails the posture. A missing bucket or refused credentials
//! do, as they fail a listing.

use object_store::aws::AwsCredential;

use super::access::{AccessError, Failure, Posture};
use super::sigv4::send_signed;
use super::xml;

/// The ACL grantee groups that mean "anyone": everybody, and everybody with any AWS account.
const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
const AUTHENTICATED_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";

/// One bucket, and what it takes to ask S3 about it.
pub(super) struct S3<'a> {
    pub(super) http: &'a reqwest::Client,
    pub(super) credential: &'a AwsCredential,
    pub(super) region: &'a str,
    /// `{endpoint}/{bucket}`.
    pub(super) bucket_url: url::Url,
}

impl S3<'_> {
    /// Reads the five configurations at once and combines them.
    pub(super) async fn posture(&self) -> Result<Posture, AccessError> {
        let (policy_status, acl, block, encryption, versioning) = futures::try_join!(
            self.read("policyStatus", Some("NoSuchBucketPolicy")),
            self.read("acl", None),
            self.read(
                "publicAccessBlock",
                Some("NoSuchPublicAccessBlockConfiguration")
            ),
            self.read(
                "encryption",
                Some("ServerSideEncryptionConfigurationNotFoundError")
            ),
            self.read("versioning", None),
        )?;
        Ok(Replies {
            policy_status,
            acl,
            block,
            encryption,
            versioning,
        }
        .posture())
    }

    /// `GET /{bucket}?{sub}`. `not_configured` is the error code S3 answers when the bucket has
    /// no such configuration, which is an answer, not a failure.
    async fn read(&self, sub: &str, not_configured: Option<&str>) -> Result<Reply, AccessError> {
        let what = format!("S3 ?{sub}");
        let mut url = self.bucket_url.clone();
        url.set_query(Some(sub));
        let response = send_signed(
            self.http,
            self.credential,
            ("s3", self.region),
            http::Method::GET,
            url.as_str(),
            Vec::new(),
        )
        .await
        .map_err(|e| e.context(&what))?;
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::identity_http(&what, &e))?;
        classify(status, body, not_configured).map_err(|e| e.context(&what))
    }
}

/// What one configuration read answered.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    /// The configuration, as S3 wrote it.
    Said(String),
    /// The bucket has none (the documented 404 for that configuration).
    NotConfigured,
    /// Not for the connector's role to read, or not implemented by the service.
    Withheld,
}

/// Sorts an answer into a [`Reply`], or the failure of the whole posture.
fn classify(status: u16, body: String, not_configured: Option<&str>) -> Result<Reply, AccessError> {
    if (200..300).contains(&status) {
        return Ok(Reply::Said(body));
    }
    let code = xml::first(&body, "Code").unwrap_or_default();
    match (status, code.as_str()) {
        (404, code) if not_configured == Some(code) => Ok(Reply::NotConfigured),
        // AccessDenied is the role's policy speaking; the other 403 codes (a bad signature, an
        // expired token, a disabled bucket) refuse the credentials or the bucket as a whole.
        (403, "AccessDenied") | (405 | 501, _) | (_, "NotImplemented") => Ok(Reply::Withheld),
        _ => {
            let failure = match status {
                401 | 403 => Failure::Permission,
                404 => Failure::NotFound,
                _ => Failure::Provider,
            };
            let why = xml::coded_error(&body).unwrap_or_else(|| status.to_string());
            Err(AccessError::new(failure, why))
        }
    }
}

/// The five answers about one bucket.
#[derive(Debug)]
struct Replies {
    policy_status: Reply,
    acl: Reply,
    block: Reply,
    encryption: Reply,
    versioning: Reply,
}

impl Replies {
    fn posture(&self) -> Posture {
        // The bucket's Public Access Block neutralises a source of public access only through
        // IgnorePublicAcls (ACL grants) and RestrictPublicBuckets (public policies); the two
        // Block* flags only refuse new grants. A block the role may not read counts as none,
        // as the account-level block (S3 Control), which is never read, does.
        let (ignore_acls, restrict_policy) = match &self.block {
            Reply::Said(body) => (
                flag(body, "IgnorePublicAcls"),
                flag(body, "RestrictPublicBuckets"),
            ),
            Reply::NotConfigured | Reply::Withheld => (false, false),
        };
        // Each source: its reasons when known, None when withheld.
        let policy: Option<Vec<&str>> = if restrict_policy {
            Some(Vec::new())
        } else {
            match &self.policy_status {
                Reply::Said(body) => xml::first(body, "IsPublic").map(|v| {
                    if is_true(&v) {
                        vec!["policy_is_public"]
                    } else {
                        Vec::new()
                    }
                }),
                Reply::NotConfigured => Some(Vec::new()),
                Reply::Withheld => None,
            }
        };
        let acl: Option<Vec<&str>> = if ignore_acls {
            Some(Vec::new())
        } else {
            match &self.acl {
                Reply::Said(body) => Some(public_grants(body)),
                Reply::NotConfigured | Reply::Withheld => None,
            }
        };
        let public_reasons: Vec<String> = policy
            .iter()
            .chain(acl.iter())
            .flatten()
            .map(|r| (*r).to_owned())
            .collect();
        let public = if !public_reasons.is_empty() {
            Some(true)
        } else if policy.is_some() && acl.is_some() {
            Some(false)
        } else {
            None
        };
        let encryption = match &self.encryption {
            Reply::Said(body) => xml::first(body, "SSEAlgorithm"),
            Reply::NotConfigured => Some("none".to_owned()),
            Reply::Withheld => None,
        };
        // A bucket whose versioning was never set answers without a Status.
        let versioning = match &self.versioning {
            Reply::Said(body) => match xml::first(body, "Status").as_deref().map(str::trim) {
                Some("Enabled") => Some("enabled"),
                Some("Suspended") => Some("suspended"),
                None | Some("") => Some("disabled"),
                Some(_) => None,
            },
            Reply::NotConfigured | Reply::Withheld => None,
        };
        Posture {
            public,
            public_reasons,
            encryption,
            versioning: versioning.map(str::to_owned),
        }
    }
}

/// The reasons an ACL makes the bucket readable by anyone: a READ or FULL_CONTROL grant to
/// everybody or to every AWS account, each named once.
fn public_grants(acl: &str) -> Vec<&'static str> {
    let mut reasons = Vec::new();
    for grant in xml::all(acl, "Grant") {
        let reads = xml::first(&grant, "Permission")
            .is_some_and(|p| matches!(p.trim(), "READ" | "FULL_CONTROL"));
        let reason = match xml::first(&grant, "URI").as_deref().map(str::trim) {
            Some(ALL_USERS) => "acl_all_users",
            Some(AUTHENTICATED_USERS) => "acl_authenticated_users",
            _ => continue,
        };
        if reads && !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    reasons
}

fn flag(body: &str, tag: &str) -> bool {
    xml::first(body, tag).is_some_and(|v| is_true(&v))
}

fn is_true(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER_ONLY: &str = "<AccessControlPolicy><AccessControlList><Grant><Grantee \
        xsi:type=\"CanonicalUser\"><ID>abc</ID></Grantee><Permission>FULL_CONTROL</Permission>\
        </Grant></AccessControlList></AccessControlPolicy>";

    fn acl_granting(uri: &str, permission: &str) -> String {
        format!(
            "<AccessControlPolicy><AccessControlList><Grant><Grantee xsi:type=\"Group\"><URI>\
             {uri}</URI></Grantee><Permission>{permission}</Permission></Grant>\
             </AccessControlList></AccessControlPolicy>"
        )
    }

    fn block(ignore_acls: bool, restrict: bool) -> Reply {
        Reply::Said(format!(
            "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>\
             <IgnorePublicAcls>{ignore_acls}</IgnorePublicAcls><BlockPublicPolicy>true\
             </BlockPublicPolicy><RestrictPublicBuckets>{restrict}</RestrictPublicBuckets>\
             </PublicAccessBlockConfiguration>"
        ))
    }

    fn private() -> Replies {
        Replies {
            policy_status: Reply::NotConfigured,
            acl: Reply::Said(OWNER_ONLY.into()),
            block: Reply::NotConfigured,
            encryption: Reply::Said(
                "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>\
                 <SSEAlgorithm>aws:kms</SSEAlgorithm></ApplyServerSideEncryptionByDefault>\
                 </Rule></ServerSideEncryptionConfiguration>"
                    .into(),
            ),
            versioning: Reply::Said("<VersioningConfiguration/>".into()),
        }
    }

    #[test]
    fn each_source_of_public_access_counts_unless_the_block_neutralises_it() {
        let posture = private().posture();
        assert_eq!(
            posture,
            Posture {
                public: Some(false),
                public_reasons: Vec::new(),
                encryption: Some("aws:kms".into()),
                versioning: Some("disabled".into()),
            }
        );

        let public_policy =
            || Reply::Said("<PolicyStatus><IsPublic>true</IsPublic></PolicyStatus>".into());
        let both = Replies {
            policy_status: public_policy(),
            acl: Reply::Said(acl_granting(AUTHENTICATED_USERS, "READ")),
            ..private()
        };
        let posture = both.posture();
        assert_eq!(posture.public, Some(true));
        assert_eq!(
            posture.public_reasons,
            ["policy_is_public", "acl_authenticated_users"]
        );

        // BlockPublicAcls and BlockPublicPolicy alone neutralise nothing already granted.
        let posture = Replies {
            block: block(false, false),
            ..both
        }
        .posture();
        assert_eq!(posture.public, Some(true));
        let posture = Replies {
            policy_status: public_policy(),
            acl: Reply::Said(acl_granting(AUTHENTICATED_USERS, "READ")),
            block: block(true, false),
            ..private()
        }
        .posture();
        assert_eq!(posture.public_reasons, ["policy_is_public"]);
        let posture = Replies {
            policy_status: public_policy(),
            acl: Reply::Said(acl_granting(ALL_USERS, "FULL_CONTROL")),
            block: block(true, true),
            ..private()
        }
        .posture();
        assert_eq!(
            (posture.public, posture.public_reasons.len()),
            (Some(false), 0)
        );
    }

    #[test]
    fn a_withheld_source_leaves_public_unknown_unless_another_says_public() {
        let posture = Replies {
            policy_status: Reply::Withheld,
            ..private()
        }
        .posture();
        assert_eq!(posture.public, None);
        // The block neutralises the withheld source: what is left is known.
        let posture = Replies {
            policy_status: Reply::Withheld,
            block: block(false, true),
            ..private()
        }
        .posture();
        assert_eq!(posture.public, Some(false));
        let posture = Replies {
            policy_status: Reply::Withheld,
            acl: Reply::Said(acl_granting(ALL_USERS, "READ")),
            ..private()
        }
        .posture();
        assert_eq!(posture.public, Some(true));
        assert_eq!(posture.public_reasons, ["acl_all_users"]);
        // A write-only grant does not make the bucket readable.
        let posture = Replies {
            acl: Reply::Said(acl_granting(ALL_USERS, "WRITE")),
            ..private()
        }
        .posture();
        assert_eq!(posture.public, Some(false));
    }

    #[test]
    fn encryption_and_versioning_read_as_s3_reports_them() {
        let posture = Replies {
            encryption: Reply::NotConfigured,
            versioning: Reply::Said(
                "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>"
                    .into(),
            ),
            ..private()
        }
        .posture();
        assert_eq!(posture.encryption.as_deref(), Some("none"));
        assert_eq!(posture.versioning.as_deref(), Some("suspended"));
        let posture = Replies {
            encryption: Reply::Withheld,
            versioning: Reply::Withheld,
            ..private()
        }
        .posture();
        assert_eq!((posture.encryption, posture.versioning), (None, None));
    }

    #[test]
    fn only_access_denied_and_unimplemented_calls_are_withheld() {
        let error = |code: &str| format!("<Error><Code>{code}</Code><Message>m</Message></Error>");
        assert_eq!(
            classify(404, error("NoSuchBucketPolicy"), Some("NoSuchBucketPolicy")).unwrap(),
            Reply::NotConfigured
        );
        assert_eq!(
            classify(403, error("AccessDenied"), None).unwrap(),
            Reply::Withheld
        );
        assert_eq!(
            classify(501, error("NotImplemented"), None).unwrap(),
            Reply::Withheld
        );
        let missing = classify(404, error("NoSuchBucket"), Some("NoSuchBucketPolicy"));
        assert_eq!(missing.unwrap_err().failure, Failure::NotFound);
        let forged = classify(403, error("SignatureDoesNotMatch"), None).unwrap_err();
        assert_eq!(forged.failure, Failure::Permission);
        assert_eq!(forged.message, "SignatureDoesNotMatch: m");
        assert_eq!(
            classify(500, error("InternalError"), None)
                .unwrap_err()
                .failure,
            Failure::Provider
        );
    }
}
