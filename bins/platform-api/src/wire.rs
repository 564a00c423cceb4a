//! The one place platform-api turns domain types into the wire shapes of `api-types`.

/// A page's pagination as the envelope shows it.
pub fn pagination(p: paging::Pagination) -> api_types::Pagination {
    api_types::Pagination {
        limit: p.limit,
        has_more: p.has_more,
        next_cursor: p.next_cursor,
    }
}
