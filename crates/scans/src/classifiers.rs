//! A tenant's custom classifiers in Postgres, and the set each scan runs with.
//!
//! Every write checks the new definition alone and then compiled together with the tenant's
//! other classifiers, under a per-tenant lock, so the stored set always compiles and never
//! exceeds [`detect::MAX_CLASSIFIERS`]. A scan copies the set when it is created; its workers
//! read that copy, so edits made during a scan apply to the next one.

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use connectors::FieldError;
use db::schema::{classifiers, scan_classifiers};
use detect::{ClassifierSpec, Classifiers, Validator};
use ids::{ClassifierId, ScanId, TenantId};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use tokenize_core::Category;

/// The most classifiers a tenant holds.
pub const MAX_PER_TENANT: usize = detect::MAX_CLASSIFIERS;

/// The cursor list name: a cursor from another list is refused.
const LIST: &str = "classifiers";

#[derive(Debug, thiserror::Error)]
pub enum ClassifierStoreError {
    #[error("classifier not found")]
    NotFound,
    #[error("a classifier with this name already exists in the tenant")]
    DuplicateName,
    #[error("the classifier is invalid")]
    Invalid(Vec<FieldError>),
    #[error("the tenant already has the most classifiers allowed")]
    TooMany,
    #[error("the cursor is not valid for this list")]
    BadCursor,
    /// A stored row no longer reads as a classifier (it was edited outside the service).
    #[error("a stored classifier is unreadable")]
    CorruptRow,
    #[error("database error")]
    Database(#[source] DieselError),
}

impl From<DieselError> for ClassifierStoreError {
    fn from(e: DieselError) -> Self {
        ClassifierStoreError::Database(e)
    }
}

impl From<BadCursor> for ClassifierStoreError {
    fn from(_: BadCursor) -> Self {
        ClassifierStoreError::BadCursor
    }
}

/// A classifier as written: POST and PUT take the whole definition, checked by [`spec_from`].
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
pub struct ClassifierInput {
    pub name: String,
    /// A detection category name.
    pub category: String,
    pub regex: String,
    pub keywords: Vec<String>,
    pub ignore_words: Vec<String>,
    /// luhn or ssa_rules.
    pub validator: Option<String>,
    pub confidence: Option<f32>,
    pub max_match_distance: Option<u32>,
}

/// A stored classifier.
#[derive(Debug, Clone)]
pub struct Classifier {
    pub id: ClassifierId,
    pub spec: ClassifierSpec,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

fn field(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
    }
}

/// Turns a request into a definition, naming every field that is wrong; then checks it alone
/// (the expression compiles, the limits hold).
pub fn spec_from(request: &ClassifierInput) -> Result<ClassifierSpec, ClassifierStoreError> {
    let mut errors = Vec::new();
    let category = Category::parse(&request.category);
    if category.is_none() {
        errors.push(field(
            "category",
            "must be one of government_id, contact, personal, financial, legal_medical",
        ));
    }
    let validator = match request.validator.as_deref() {
        None => None,
        Some(name) => {
            let parsed = Validator::parse(name);
            if parsed.is_none() {
                errors.push(field("validator", "must be luhn or ssa_rules"));
            }
            parsed
        }
    };
    let Some(category) = category else {
        return Err(ClassifierStoreError::Invalid(errors));
    };
    let spec = ClassifierSpec {
        name: request.name.clone(),
        category,
        regex: request.regex.clone(),
        keywords: request.keywords.clone(),
        ignore_words: request.ignore_words.clone(),
        validator,
        confidence: request.confidence.unwrap_or(detect::DEFAULT_CONFIDENCE),
        max_match_distance: request
            .max_match_distance
            .map_or(detect::DEFAULT_MATCH_DISTANCE, |d| d as usize),
    };
    if let Err(e) = spec.validate() {
        errors.push(field(e.field, e.message));
    }
    if errors.is_empty() {
        Ok(spec)
    } else {
        Err(ClassifierStoreError::Invalid(errors))
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = classifiers, check_for_backend(diesel::pg::Pg))]
struct Row {
    classifier_id: Uuid,
    spec: serde_json::Value,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

fn view(row: Row) -> Result<Classifier, ClassifierStoreError> {
    let spec = serde_json::from_value(row.spec).map_err(|_| ClassifierStoreError::CorruptRow)?;
    Ok(Classifier {
        id: ClassifierId::from_uuid(row.classifier_id),
        spec,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// Serializes writes to one tenant's classifiers for the rest of the transaction.
async fn lock(conn: &mut AsyncPgConnection, tenant: &TenantId) -> Result<(), DieselError> {
    db::sql("SELECT pg_advisory_xact_lock(hashtext('dps-classifiers:' || $1))")
        .bind::<Text, _>(tenant.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

/// Checks that `spec` compiles together with the tenant's other classifiers (all but
/// `replacing`) and that the set stays within the limit.
async fn check_set(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    spec: &ClassifierSpec,
    replacing: Option<ClassifierId>,
) -> Result<(), ClassifierStoreError> {
    let mut query = classifiers::table
        .filter(classifiers::tenant_id.eq(tenant.as_str()))
        .select(classifiers::spec)
        .into_boxed();
    if let Some(id) = replacing {
        query = query.filter(classifiers::classifier_id.ne(id.as_uuid()));
    }
    let others: Vec<serde_json::Value> = query.load(conn).await?;
    if others.len() >= MAX_PER_TENANT {
        return Err(ClassifierStoreError::TooMany);
    }
    let mut set: Vec<ClassifierSpec> = others
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .map_err(|_| ClassifierStoreError::CorruptRow)?;
    if set.iter().any(|s| s.name == spec.name) {
        return Err(ClassifierStoreError::DuplicateName);
    }
    set.push(spec.clone());
    Classifiers::compile(&set).map_err(|e| {
        ClassifierStoreError::Invalid(vec![field(
            "regex",
            format!(
                "together with the tenant's other classifiers: {}",
                e.message
            ),
        )])
    })?;
    Ok(())
}

fn unique_name(e: DieselError) -> ClassifierStoreError {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
            ClassifierStoreError::DuplicateName
        }
        e => ClassifierStoreError::Database(e),
    }
}

/// Creates a classifier after checking it alone and with the tenant's others.
pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    input: &ClassifierInput,
) -> Result<Classifier, ClassifierStoreError> {
    let spec = spec_from(input)?;
    let json = serde_json::to_value(&spec).map_err(|_| ClassifierStoreError::CorruptRow)?;
    conn.transaction::<_, ClassifierStoreError, _>(async |conn| {
        lock(conn, tenant).await?;
        check_set(conn, tenant, &spec, None).await?;
        let row: Row = diesel::insert_into(classifiers::table)
            .values((
                classifiers::tenant_id.eq(tenant.as_str()),
                classifiers::classifier_id.eq(ClassifierId::new().as_uuid()),
                classifiers::name.eq(&spec.name),
                classifiers::spec.eq(json),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await
            .map_err(unique_name)?;
        view(row)
    })
    .await
}

/// Replaces a classifier's whole definition.
pub async fn update(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ClassifierId,
    input: &ClassifierInput,
) -> Result<Classifier, ClassifierStoreError> {
    let spec = spec_from(input)?;
    let json = serde_json::to_value(&spec).map_err(|_| ClassifierStoreError::CorruptRow)?;
    conn.transaction::<_, ClassifierStoreError, _>(async |conn| {
        lock(conn, tenant).await?;
        get(conn, tenant, id).await?;
        check_set(conn, tenant, &spec, Some(id)).await?;
        let row: Row = diesel::update(
            classifiers::table
                .filter(classifiers::tenant_id.eq(tenant.as_str()))
                .filter(classifiers::classifier_id.eq(id.as_uuid())),
        )
        .set((
            classifiers::name.eq(&spec.name),
            classifiers::spec.eq(json),
            classifiers::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await
        .map_err(unique_name)?;
        view(row)
    })
    .await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ClassifierId,
) -> Result<Classifier, ClassifierStoreError> {
    let row: Option<Row> = classifiers::table
        .filter(classifiers::tenant_id.eq(tenant.as_str()))
        .filter(classifiers::classifier_id.eq(id.as_uuid()))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?;
    view(row.ok_or(ClassifierStoreError::NotFound)?)
}

/// Deletes a classifier. Scans already created keep the copy they started with, and findings
/// it made stay.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ClassifierId,
) -> Result<(), ClassifierStoreError> {
    let deleted = diesel::delete(
        classifiers::table
            .filter(classifiers::tenant_id.eq(tenant.as_str()))
            .filter(classifiers::classifier_id.eq(id.as_uuid())),
    )
    .execute(conn)
    .await?;
    if deleted == 0 {
        return Err(ClassifierStoreError::NotFound);
    }
    Ok(())
}

/// One page of classifiers, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    page: PageRequest<'_>,
) -> Result<Page<Classifier>, ClassifierStoreError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    let mut query = classifiers::table
        .filter(classifiers::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        .order((classifiers::created_at, classifiers::classifier_id))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(after) = keyset.after::<classifiers::created_at, classifiers::classifier_id, _>()? {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    keyset
        .page(rows, |r| Position::at(r.created_at, r.classifier_id))
        .try_map(view)
}

/// Copies the tenant's classifiers to a new scan (nothing when it has none). Runs inside the
/// transaction that creates the scan.
pub(crate) async fn snapshot(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<(), DieselError> {
    db::sql(
        "INSERT INTO scan_classifiers (tenant_id, scan_id, specs) \
         SELECT $1, $2, jsonb_agg(spec ORDER BY name) FROM classifiers WHERE tenant_id = $1 \
         HAVING count(*) > 0",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(scan.as_uuid())
    .execute(conn)
    .await?;
    Ok(())
}

/// The classifiers a scan runs with: the copy made when it was created.
/// Which of `names` are classifiers of the tenant (a policy's conditions name them).
pub async fn existing_names(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    names: &[String],
) -> QueryResult<std::collections::BTreeSet<String>> {
    if names.is_empty() {
        return Ok(Default::default());
    }
    let found: Vec<String> = classifiers::table
        .filter(classifiers::tenant_id.eq(tenant.as_str()))
        .filter(classifiers::name.eq_any(names))
        .select(classifiers::name)
        .load(conn)
        .await?;
    Ok(found.into_iter().collect())
}

pub async fn for_scan(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<Vec<ClassifierSpec>, crate::error::ScanError> {
    let specs: Option<serde_json::Value> = scan_classifiers::table
        .filter(scan_classifiers::tenant_id.eq(tenant.as_str()))
        .filter(scan_classifiers::scan_id.eq(scan.as_uuid()))
        .select(scan_classifiers::specs)
        .first(conn)
        .await
        .optional()?;
    match specs {
        None => Ok(Vec::new()),
        Some(specs) => {
            serde_json::from_value(specs).map_err(|_| crate::error::ScanError::CorruptRow)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> ClassifierInput {
        serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"))
    }

    fn fields(result: Result<ClassifierSpec, ClassifierStoreError>) -> Vec<String> {
        match result {
            Err(ClassifierStoreError::Invalid(fields)) => {
                fields.into_iter().map(|f| f.field).collect()
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_request_takes_the_defaults_it_omits() {
        let spec = spec_from(&request(serde_json::json!({
            "name": "badge", "category": "personal", "regex": "B[0-9]{4}",
        })))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.confidence, detect::DEFAULT_CONFIDENCE);
        assert_eq!(spec.max_match_distance, detect::DEFAULT_MATCH_DISTANCE);
        assert_eq!(spec.validator, None);
        assert_eq!(spec.category, Category::Personal);
    }

    #[test]
    fn every_wrong_field_is_named() {
        assert_eq!(
            fields(spec_from(&request(serde_json::json!({
                "name": "x", "category": "nope", "regex": "B", "validator": "crc",
            })))),
            ["category", "validator"]
        );
        assert_eq!(
            fields(spec_from(&request(serde_json::json!({
                "name": "x", "category": "contact", "regex": "B", "validator": "crc",
            })))),
            ["validator"]
        );
        assert_eq!(
            fields(spec_from(&request(serde_json::json!({
                "name": "x", "category": "contact", "regex": "[",
            })))),
            ["regex"]
        );
    }
}
