//! Cutting pages: the resume filter, the page of N + 1 and the pagination object.

use diesel::expression::BoxableExpression;
use diesel::pg::Pg;
use diesel::sql_types::{Bool, Timestamptz, Uuid as SqlUuid};
use ids::TenantId;

use crate::cursor::{BadCursor, CursorKey, Position};

/// A filter on a query of `QS`, as boxed queries take it.
pub type Filter<QS> = Box<dyn BoxableExpression<QS, Pg, SqlType = Bool> + 'static>;

/// The largest page any list serves.
pub const MAX_LIMIT: u32 = 100;

/// A page size of 1 to [`MAX_LIMIT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(u32);

/// A requested page size outside 1 to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("limit must be between 1 and 100")]
pub struct LimitOutOfRange;

impl Limit {
    /// The page size a caller asked for, or the list's default.
    pub fn parse(requested: Option<i64>, default: u32) -> Result<Self, LimitOutOfRange> {
        match requested {
            None => Ok(Self(default.clamp(1, MAX_LIMIT))),
            Some(n) => u32::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .map(Self)
                .ok_or(LimitOutOfRange),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// Which way a list runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// What a list response says about the rest of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pagination {
    pub limit: u32,
    pub has_more: bool,
    /// Present when `has_more` is true.
    pub next_cursor: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub pagination: Pagination,
}

impl<T> Page<T> {
    /// The same page with each item changed.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            pagination: self.pagination,
        }
    }

    /// The same page with each item changed by a fallible function.
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, E>>()?,
            pagination: self.pagination,
        })
    }
}

/// What a caller asks of any list: where to resume (`cursor`, as it was sent), how many rows,
/// and the key that signs and checks cursors. Each list takes one, beside its own filter.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest<'a> {
    pub cursors: &'a CursorKey,
    pub limit: Limit,
    pub cursor: Option<&'a str>,
}

impl<'a> PageRequest<'a> {
    /// A first page of `limit` rows.
    pub fn first(cursors: &'a CursorKey, limit: Limit) -> Self {
        Self {
            cursors,
            limit,
            cursor: None,
        }
    }
}

/// One request for a page of one tenant's list: where it resumes, how many rows to read, and
/// how to cut and sign what was read.
#[derive(Debug)]
pub struct Keyset<'a> {
    cursors: &'a CursorKey,
    tenant: &'a TenantId,
    list: &'static str,
    limit: Limit,
    order: Order,
    after: Option<Position>,
}

impl<'a> Keyset<'a> {
    /// `list` names the list in its cursors, so that a cursor of one list is refused by
    /// another.
    pub fn new(
        request: PageRequest<'a>,
        tenant: &'a TenantId,
        list: &'static str,
        order: Order,
    ) -> Result<Self, BadCursor> {
        let PageRequest {
            cursors,
            limit,
            cursor,
        } = request;
        let after = cursor
            .map(|c| cursors.decode(tenant, list, c))
            .transpose()?;
        Ok(Self {
            cursors,
            tenant,
            list,
            limit,
            order,
            after,
        })
    }

    /// How many rows to read: one more than the page holds, to learn whether more follow.
    pub fn fetch(&self) -> i64 {
        i64::from(self.limit.get()) + 1
    }

    fn comparison(&self) -> &'static str {
        match self.order {
            Order::Ascending => ">",
            Order::Descending => "<",
        }
    }

    /// The filter that resumes a list ordered by `(T, I)` after the cursor: a row comparison,
    /// which an index on `(tenant_id, T, I)` serves. `None` on a first page.
    pub fn after<T, I, QS>(&self) -> Result<Option<Filter<QS>>, BadCursor>
    where
        T: diesel::Column<SqlType = Timestamptz>,
        I: diesel::Column<SqlType = SqlUuid>,
    {
        let Some(after) = self.after else {
            return Ok(None);
        };
        let at = after.time()?;
        let sql = format!("({}, {}) {} (", T::NAME, I::NAME, self.comparison());
        Ok(Some(Box::new(
            diesel::dsl::sql::<Bool>(&sql)
                .bind::<Timestamptz, _>(at)
                .sql(", ")
                .bind::<SqlUuid, _>(after.id)
                .sql(")"),
        )))
    }

    /// The filter that resumes a list ordered by its id `I` alone (UUIDv7 ids, in creation
    /// order). `None` on a first page.
    pub fn after_id<I, QS>(
        &self,
    ) -> Option<Box<dyn BoxableExpression<QS, Pg, SqlType = Bool> + 'static>>
    where
        I: diesel::Column<SqlType = SqlUuid>,
    {
        let after = self.after?;
        let sql = format!("{} {} ", I::NAME, self.comparison());
        Some(Box::new(
            diesel::dsl::sql::<Bool>(&sql).bind::<SqlUuid, _>(after.id),
        ))
    }

    /// Where the list resumes, as the cursor said; `None` on a first page. For lists ordered
    /// by something the other helpers do not cover (a score, then an id).
    pub fn position(&self) -> Option<Position> {
        self.after
    }

    /// Where a list ordered by a number alone (see [`Position::seq`]) resumes: rows after this
    /// number. `None` on a first page.
    pub fn after_seq(&self) -> Option<i64> {
        self.after.map(|p| p.micros)
    }

    /// Cuts the page from rows read with [`Keyset::fetch`], and signs the cursor of the last
    /// row kept when more follow.
    pub fn page<T>(&self, rows: Vec<T>, position: impl Fn(&T) -> Position) -> Page<T> {
        self.page_settled(rows, usize::MAX, position)
    }

    /// Like [`Keyset::page`], for a list whose rows past the first `settled` may still have
    /// rows committed before them (`scans::findings::list`): when more rows follow than the
    /// page shows, it ends after at most `settled` rows, so that no cursor passes an unsettled
    /// row. A page cut to nothing says more follow and resumes where it began.
    pub fn page_settled<T>(
        &self,
        mut rows: Vec<T>,
        settled: usize,
        position: impl Fn(&T) -> Position,
    ) -> Page<T> {
        let limit = self.limit.get() as usize;
        let has_more = rows.len() > limit;
        let keep = if has_more { limit.min(settled) } else { limit };
        rows.truncate(keep);
        let next_cursor = has_more.then(|| {
            let at = rows
                .last()
                .map(&position)
                .or(self.after)
                .unwrap_or(match self.order {
                    // Before every row of the lists that page this way (txids and times are
                    // never below zero).
                    Order::Ascending => Position {
                        micros: 0,
                        id: uuid::Uuid::nil(),
                    },
                    Order::Descending => Position {
                        micros: i64::MAX,
                        id: uuid::Uuid::max(),
                    },
                });
            self.cursors.encode(self.tenant, self.list, at)
        });
        Page {
            items: rows,
            pagination: Pagination {
                limit: self.limit.get(),
                has_more,
                next_cursor,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_one_to_a_hundred() {
        assert_eq!(Limit::parse(None, 20).unwrap().get(), 20);
        assert_eq!(Limit::parse(Some(100), 20).unwrap().get(), 100);
        for bad in [0, -1, 101, i64::MAX] {
            assert!(Limit::parse(Some(bad), 20).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_page_ends_at_its_settled_rows_when_more_follow() {
        let key = CursorKey::new(&[1u8; 32]);
        let tenant: TenantId = "acme".parse().unwrap();
        let limit = Limit::parse(Some(3), 20).unwrap();
        let ids: Vec<uuid::Uuid> = (0..4).map(|_| uuid::Uuid::now_v7()).collect();
        let keyset = Keyset::new(
            PageRequest::first(&key, limit),
            &tenant,
            "things",
            Order::Ascending,
        )
        .unwrap();
        // Two settled of four read: the page shows two and resumes after the second.
        let page = keyset.page_settled(ids.clone(), 2, |id| Position::id(*id));
        assert_eq!(page.items, ids[..2]);
        let cursor = page.pagination.next_cursor.unwrap();
        assert_eq!(key.decode(&tenant, "things", &cursor).unwrap().id, ids[1]);
        // The last page shows everything, settled or not: no cursor can pass what it shows.
        let last = keyset.page_settled(ids[..3].to_vec(), 0, |id| Position::id(*id));
        assert_eq!(last.items, ids[..3]);
        assert!(!last.pagination.has_more);
        // Nothing settled: an empty page that resumes where it began.
        let one = Limit::parse(Some(1), 20).unwrap();
        let resumed = Keyset::new(
            PageRequest {
                cursors: &key,
                limit: one,
                cursor: Some(&cursor),
            },
            &tenant,
            "things",
            Order::Ascending,
        )
        .unwrap();
        let empty = resumed.page_settled(ids[2..].to_vec(), 0, |id| Position::id(*id));
        assert!(empty.items.is_empty());
        assert!(empty.pagination.has_more);
        let again = empty.pagination.next_cursor.unwrap();
        assert_eq!(key.decode(&tenant, "things", &again).unwrap().id, ids[1]);
        let first = keyset.page_settled(ids.clone(), 0, |id| Position::id(*id));
        let start = key
            .decode(&tenant, "things", &first.pagination.next_cursor.unwrap())
            .unwrap();
        assert_eq!((start.micros, start.id), (0, uuid::Uuid::nil()));
    }

    #[test]
    fn a_page_of_n_plus_one_says_more_follow_and_signs_the_last_kept() {
        let key = CursorKey::new(&[1u8; 32]);
        let tenant: TenantId = "acme".parse().unwrap();
        let limit = Limit::parse(Some(2), 20).unwrap();
        let keyset = Keyset::new(
            PageRequest::first(&key, limit),
            &tenant,
            "things",
            Order::Ascending,
        )
        .unwrap();
        assert_eq!(keyset.fetch(), 3);
        let ids: Vec<uuid::Uuid> = (0..3).map(|_| uuid::Uuid::now_v7()).collect();
        let page = keyset.page(ids.clone(), |id| Position::id(*id));
        assert_eq!(page.items, ids[..2]);
        assert!(page.pagination.has_more);
        let cursor = page.pagination.next_cursor.unwrap();
        assert_eq!(key.decode(&tenant, "things", &cursor).unwrap().id, ids[1]);
        let last = keyset.page(ids[..1].to_vec(), |id| Position::id(*id));
        assert!(!last.pagination.has_more);
        assert_eq!(last.pagination.next_cursor, None);
        assert!(
            Keyset::new(
                PageRequest {
                    cursors: &key,
                    limit,
                    cursor: Some(&cursor)
                },
                &tenant,
                "other",
                Order::Ascending
            )
            .is_err()
        );
    }
}
