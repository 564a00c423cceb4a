//! A domain enum kept in a `text` column: written as its name, read back only as one of its
//! names. An unknown value read from the database is an error, never a silent default.

/// Maps `$ty` to Postgres `text` for diesel, through its `as_str(self) -> &'static str` and
/// `parse(&str) -> Option<Self>`. The type can then be a field of `Queryable`,
/// `QueryableByName` and `Selectable` rows over a `Text` column, a value `load`ed alone, and a
/// bind of `sql_query`. A stored string that `parse` does not know fails the read with a
/// deserialization error naming the type (never the value: the column holds a state, but the
/// rule is kept for every column).
#[macro_export]
macro_rules! text_enum {
    ($ty:ty) => {
        impl ::diesel::serialize::ToSql<::diesel::sql_types::Text, ::diesel::pg::Pg> for $ty {
            fn to_sql<'b>(
                &'b self,
                out: &mut ::diesel::serialize::Output<'b, '_, ::diesel::pg::Pg>,
            ) -> ::diesel::serialize::Result {
                ::std::io::Write::write_all(out, <$ty>::as_str(*self).as_bytes())?;
                Ok(::diesel::serialize::IsNull::No)
            }
        }

        impl ::diesel::deserialize::FromSql<::diesel::sql_types::Text, ::diesel::pg::Pg> for $ty {
            fn from_sql(value: ::diesel::pg::PgValue<'_>) -> ::diesel::deserialize::Result<Self> {
                let raw = ::std::str::from_utf8(value.as_bytes())?;
                <$ty>::parse(raw).ok_or_else(|| {
                    concat!(
                        "a stored ",
                        stringify!($ty),
                        " that this build does not know"
                    )
                    .into()
                })
            }
        }

        impl ::diesel::deserialize::Queryable<::diesel::sql_types::Text, ::diesel::pg::Pg> for $ty {
            type Row = Self;
            fn build(row: Self) -> ::diesel::deserialize::Result<Self> {
                Ok(row)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use diesel::pg::{Pg, PgValue, TypeOidLookup};
    use diesel::sql_types::Text;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Light {
        Red,
        Green,
    }

    impl Light {
        fn as_str(self) -> &'static str {
            match self {
                Light::Red => "red",
                Light::Green => "green",
            }
        }
        fn parse(raw: &str) -> Option<Self> {
            [Light::Red, Light::Green]
                .into_iter()
                .find(|l| l.as_str() == raw)
        }
    }

    crate::text_enum!(Light);

    struct TextOid;
    impl TypeOidLookup for TextOid {
        fn lookup(&self) -> std::num::NonZeroU32 {
            std::num::NonZeroU32::new(25).unwrap()
        }
    }

    fn read(raw: &str) -> diesel::deserialize::Result<Light> {
        <Light as diesel::deserialize::FromSql<Text, Pg>>::from_sql(PgValue::new(
            raw.as_bytes(),
            &TextOid,
        ))
    }

    #[test]
    fn a_known_name_reads_back_and_an_unknown_one_is_an_error() {
        assert_eq!(read("red").unwrap(), Light::Red);
        assert_eq!(read("green").unwrap(), Light::Green);
        let unknown = read("amber").unwrap_err().to_string();
        assert!(unknown.contains("Light"), "{unknown}");
        assert!(
            !unknown.contains("amber"),
            "the stored value is not echoed: {unknown}"
        );
        assert!(read("Red").is_err(), "names are exact");
    }
}
