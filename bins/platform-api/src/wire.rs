//! The one place platform-api turns domain types into the wire shapes of `api-types`.

/// A page's pagination as the envelope shows it.
pub fn pagination(p: paging::Pagination) -> api_types::Pagination {
    api_types::Pagination {
        limit: p.limit,
        has_more: p.has_more,
        next_cursor: p.next_cursor,
    }
}

pub fn safety_class(c: settings::SafetyClass) -> api_types::settings::SafetyClass {
    use api_types::settings::SafetyClass as Wire;
    match c {
        settings::SafetyClass::ReadOnly => Wire::ReadOnly,
        settings::SafetyClass::Reversible => Wire::Reversible,
        settings::SafetyClass::Destructive => Wire::Destructive,
        settings::SafetyClass::Infrastructure => Wire::Infrastructure,
        settings::SafetyClass::Governance => Wire::Governance,
        settings::SafetyClass::InlineRuntime => Wire::InlineRuntime,
    }
}

fn safety_classes(classes: Vec<settings::SafetyClass>) -> Vec<api_types::settings::SafetyClass> {
    classes.into_iter().map(safety_class).collect()
}

pub fn lkg_retention(v: settings::LkgRetention) -> api_types::settings::LkgRetention {
    api_types::settings::LkgRetention {
        retention_hours: v.retention_hours,
        allowed_options: v.allowed_options,
        default_hours: v.default_hours,
        updated_at: v.updated_at,
        updated_by: v.updated_by,
        change_log: v
            .change_log
            .into_iter()
            .map(|c| api_types::settings::LkgRetentionChange {
                from_hours: c.from_hours,
                to_hours: c.to_hours,
                changed_at: c.changed_at,
                changed_by: c.changed_by,
            })
            .collect(),
    }
}

pub fn remediation_policy(
    v: settings::RemediationPolicy,
) -> api_types::settings::RemediationPolicy {
    api_types::settings::RemediationPolicy {
        tenant_id: v.tenant_id,
        denied_safety_classes: safety_classes(v.denied_safety_classes),
        allowed_safety_classes: safety_classes(v.allowed_safety_classes),
        enforceable_safety_classes: safety_classes(v.enforceable_safety_classes),
        updated_at: v.updated_at,
        updated_by: v.updated_by,
    }
}

fn cosigning_mode(m: settings::CosigningMode) -> api_types::settings::CosigningMode {
    use api_types::settings::CosigningMode as Wire;
    match m {
        settings::CosigningMode::Disabled => Wire::Disabled,
        settings::CosigningMode::Optional => Wire::Optional,
        settings::CosigningMode::Required => Wire::Required,
    }
}

pub fn cosigning_update(u: &api_types::settings::CosigningUpdate) -> settings::CosigningUpdate {
    use api_types::settings::CosigningMode as Wire;
    settings::CosigningUpdate {
        mode: match u.mode {
            Wire::Disabled => settings::CosigningMode::Disabled,
            Wire::Optional => settings::CosigningMode::Optional,
            Wire::Required => settings::CosigningMode::Required,
        },
        endpoint_url: u.endpoint_url.clone(),
    }
}

pub fn cosigning(v: settings::Cosigning) -> api_types::settings::Cosigning {
    api_types::settings::Cosigning {
        tenant_id: v.tenant_id,
        mode: cosigning_mode(v.mode),
        endpoint_url: v.endpoint_url,
        platform_provisioned: v.platform_provisioned,
        updated_at: v.updated_at,
        updated_by: v.updated_by,
    }
}

pub fn classifier_input(
    r: &api_types::classifiers::ClassifierRequest,
) -> scans::classifiers::ClassifierInput {
    scans::classifiers::ClassifierInput {
        name: r.name.clone(),
        category: r.category.clone(),
        regex: r.regex.clone(),
        keywords: r.keywords.clone(),
        ignore_words: r.ignore_words.clone(),
        validator: r.validator.clone(),
        confidence: r.confidence,
        max_match_distance: r.max_match_distance,
    }
}

pub fn classifier(c: scans::classifiers::Classifier) -> api_types::classifiers::Classifier {
    let spec = c.spec;
    api_types::classifiers::Classifier {
        id: c.id.to_string(),
        finding_type: format!("custom:{}", spec.name),
        name: spec.name,
        category: spec.category.as_str().into(),
        regex: spec.regex,
        keywords: spec.keywords,
        ignore_words: spec.ignore_words,
        validator: spec.validator.map(|v| v.as_str().into()),
        confidence: spec.confidence,
        max_match_distance: u32::try_from(spec.max_match_distance).unwrap_or(u32::MAX),
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
}
