//! Raw SQL that each connection prepares once and then runs by name.
//!
//! `diesel::sql_query` marks every statement unsafe to cache, because its text could be built
//! at run time: each call then costs Postgres a parse and a plan, and the connection a round
//! trip to prepare it before the one that runs it. [`sql`] takes `&'static str` only, text
//! written in the source, so the set of statements is fixed and each connection's statement
//! cache keeps them prepared. Binds are written `$1`, `$2`… as with `sql_query`, and may be used
//! more than once; `bind` adds them in order.
//!
//! Text built at run time (`format!`) stays with `diesel::sql_query`.

use std::marker::PhantomData;

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::{Error, QueryResult};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};

/// A statement of static text and its binds; run it with diesel-async's `RunQueryDsl`.
#[must_use = "a statement does nothing until it is run"]
#[derive(Debug, Clone, Copy)]
pub struct Sql<B> {
    text: &'static str,
    binds: B,
}

/// Raw SQL that is prepared once per connection (see the module's documentation).
pub fn sql(text: &'static str) -> Sql<NoBinds> {
    Sql {
        text,
        binds: NoBinds,
    }
}

impl<B: Binds> Sql<B> {
    /// Binds the next parameter (`$1` first) as SQL type `ST`.
    pub fn bind<ST, V>(self, value: V) -> Sql<Bound<B, V, ST>>
    where
        Pg: HasSqlType<ST>,
        V: ToSql<ST, Pg>,
    {
        Sql {
            text: self.text,
            binds: Bound {
                earlier: self.binds,
                value,
                sql_type: PhantomData,
            },
        }
    }
}

/// The binds of a statement, numbered from 1 in the order they were added.
pub trait Binds {
    /// How many there are.
    const COUNT: usize;

    /// Pushes bind `n` (from 1) where its placeholder stands.
    fn push<'b>(&'b self, n: usize, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()>;
}

/// A statement without binds yet.
#[derive(Debug, Clone, Copy)]
pub struct NoBinds;

impl Binds for NoBinds {
    const COUNT: usize = 0;

    fn push<'b>(&'b self, n: usize, _: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        Err(unbound(n))
    }
}

/// The binds before, and one more.
#[derive(Debug, Clone, Copy)]
pub struct Bound<B, V, ST> {
    earlier: B,
    value: V,
    sql_type: PhantomData<fn() -> ST>,
}

impl<B, V, ST> Binds for Bound<B, V, ST>
where
    B: Binds,
    Pg: HasSqlType<ST>,
    V: ToSql<ST, Pg>,
{
    const COUNT: usize = B::COUNT + 1;

    fn push<'b>(&'b self, n: usize, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        if n == Self::COUNT {
            out.push_bind_param::<ST, V>(&self.value)
        } else {
            self.earlier.push(n, out)
        }
    }
}

fn unbound(n: usize) -> Error {
    Error::QueryBuilderError(format!("the statement uses ${n}, which has no bind").into())
}

impl<B: Binds> QueryFragment<Pg> for Sql<B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        // Each placeholder becomes the bind it names; diesel numbers the placeholders it writes
        // in order, so a parameter used twice is sent twice.
        let mut rest = self.text;
        while let Some((before, n, after)) = next_placeholder(rest) {
            out.push_sql(before);
            if n == 0 || n > B::COUNT {
                return Err(unbound(n));
            }
            self.binds.push(n, &mut out)?;
            rest = after;
        }
        out.push_sql(rest);
        Ok(())
    }
}

/// The text before the next `$n` outside quotes and comments, `n`, and the text after it.
fn next_placeholder(text: &str) -> Option<(&str, usize, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // A quoted literal or identifier; a doubled quote stays inside it.
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'$' => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits > 0 {
                    let end = i + 1 + digits;
                    let n = text[i + 1..end].parse().unwrap_or(usize::MAX);
                    return Some((&text[..i], n, &text[end..]));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

impl<B> QueryId for Sql<B> {
    type QueryId = ();

    // No type names the statement: the cache finds it by its text.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Sql<B> {
    type SqlType = Untyped;
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::debug_query;
    use diesel::sql_types::{Integer, Text};

    #[test]
    fn placeholders_become_binds_in_order_even_when_repeated() {
        let q = sql("SELECT $2::int + $1 WHERE $2 > 0")
            .bind::<Integer, _>(1)
            .bind::<Integer, _>(2);
        let shown = debug_query::<Pg, _>(&q).to_string();
        assert_eq!(
            shown,
            "SELECT $1::int + $2 WHERE $3 > 0 -- binds: [2, 1, 2]"
        );
    }

    #[test]
    fn quoted_text_and_comments_keep_their_dollars() {
        let q = sql("SELECT '$1', \"a$1\" -- $1 costs\n, $1").bind::<Text, _>("x");
        let shown = debug_query::<Pg, _>(&q).to_string();
        assert_eq!(
            shown,
            "SELECT '$1', \"a$1\" -- $1 costs\n, $1 -- binds: [\"x\"]"
        );
    }

    #[test]
    fn a_placeholder_without_a_bind_is_an_error_not_a_panic() {
        let written = |q: &dyn QueryFragment<Pg>| {
            let mut builder = diesel::pg::PgQueryBuilder::default();
            q.to_sql(&mut builder, &Pg).map_err(|e| e.to_string())
        };
        let short = sql("SELECT $1, $2").bind::<Integer, _>(1);
        assert_eq!(
            written(&short),
            Err("the statement uses $2, which has no bind".to_owned())
        );
        assert_eq!(
            written(&sql("SELECT $0")),
            Err("the statement uses $0, which has no bind".to_owned())
        );
        assert_eq!(written(&sql("SELECT 1")), Ok(()));
    }

    #[test]
    fn the_statement_is_safe_to_cache() {
        let q = sql("SELECT $1").bind::<Integer, _>(1);
        assert!(q.is_safe_to_cache_prepared(&Pg).unwrap());
    }
}
