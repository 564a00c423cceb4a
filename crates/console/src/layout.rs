//! What every page's frame shows: the navigation, who is signed in, the sign-out form.

use crate::view::Viewer;

/// A page's place in the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Overview,
    DataMap,
    Connectors,
    Scans,
    Findings,
    Policies,
    Drift,
    Remediations,
    Audit,
    Alerts,
    Settings,
    Tokenization,
}

/// One link of the navigation.
#[derive(Debug, Clone)]
pub struct NavItem {
    pub href: &'static str,
    pub label: &'static str,
    pub current: bool,
}

/// The frame of a signed-in page.
#[derive(Debug, Clone)]
pub struct Layout {
    pub title: String,
    pub nav: Vec<NavItem>,
    pub user: String,
    pub tenant: String,
    pub roles: String,
    pub csrf: String,
}

impl Layout {
    pub fn new(viewer: &Viewer, section: Section, title: impl Into<String>) -> Self {
        let may = viewer.may;
        let items: [(Section, &'static str, &'static str, bool); 12] = [
            (Section::Overview, "/console", "Overview", true),
            (Section::DataMap, "/console/data-map", "Data map", true),
            (
                Section::Connectors,
                "/console/connectors",
                "Connectors",
                true,
            ),
            (Section::Scans, "/console/scans", "Scans", true),
            (Section::Findings, "/console/findings", "Findings", true),
            (Section::Policies, "/console/policies", "Policies", true),
            (Section::Drift, "/console/drift", "Drift", true),
            (
                Section::Remediations,
                "/console/remediations",
                "Remediations",
                may.remediations,
            ),
            (Section::Audit, "/console/audit", "Audit log", true),
            (
                Section::Alerts,
                "/console/alerts",
                "Alerts",
                may.alert_channels,
            ),
            (
                Section::Settings,
                "/console/settings",
                "Settings",
                may.settings,
            ),
            (
                Section::Tokenization,
                "/console/tokenization",
                "Tokenization",
                true,
            ),
        ];
        Self {
            title: title.into(),
            nav: items
                .into_iter()
                .filter(|(_, _, _, shown)| *shown)
                .map(|(s, href, label, _)| NavItem {
                    href,
                    label,
                    current: s == section,
                })
                .collect(),
            user: viewer.principal.user_id.as_str().to_owned(),
            tenant: viewer.principal.tenant_id.as_str().to_owned(),
            roles: viewer.principal.roles.join(", "),
            csrf: viewer.csrf.clone(),
        }
    }
}
