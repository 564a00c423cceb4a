//! Changing objects in place, for remediation: reading an object whole with its ETag, then
//! replacing, creating, copying or deleting objects, each write conditional on the ETag that
//! was read so a concurrent change is never overwritten.
//!
//! A failed condition is [`Failure::Changed`] and changes nothing. A missing object under a
//! condition that named its ETag is [`Failure::Changed`] too: it changed from what was read.
//! Every ETag taken may be spelled with or without quotes; every ETag returned is spelled as
//! the provider's listing spells it (see [`Object::etag`]), so an ETag from a listing, a head,
//! a read or a write can be compared with any other as text.
//!
//! Each provider's requests, and what its emulator cannot check, are in the crate's README
//! ("Writes").

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt};

use super::access::{AccessError, Failure, Put, object_path, quoted, same_etag};
use super::properties::{Encryption, Properties};
use super::{Bucket, Object, Storage};

/// An object read whole, and the ETag of the version read.
#[derive(Clone, PartialEq, Eq)]
pub struct Whole {
    pub bytes: Bytes,
    pub etag: String,
    /// Its served headers, user metadata and customer-managed key: a rewrite keeps them.
    pub properties: Properties,
}

/// The content is the customer's, and may be exactly what remediation is about to protect:
/// never printed.
impl std::fmt::Debug for Whole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Whole")
            .field("bytes", &format_args!("{} bytes", self.bytes.len()))
            .field("etag", &self.etag)
            .field("properties", &self.properties)
            .finish()
    }
}

impl Bucket {
    /// Reads a whole object with its current ETag. With `etag`, fails with
    /// [`Failure::Changed`] when the object's ETag differs or the object is gone (the service
    /// checks `If-Match`, and the answer's ETag is checked again here, as fake-gcs-server
    /// ignores `If-Match`). An object larger than `max_bytes` is refused
    /// ([`Failure::TooLarge`]) before its content is read.
    pub async fn read_whole(
        &self,
        key: &str,
        etag: Option<&str>,
        max_bytes: u64,
    ) -> Result<Whole, AccessError> {
        let path = object_path(key)?;
        let options = GetOptions {
            if_match: etag.map(quoted),
            ..Default::default()
        };
        let result = self
            .store
            .get_opts(&path, options)
            .await
            .map_err(|e| AccessError::conditional(e, etag.is_some(), false))?;
        let found = result
            .meta
            .e_tag
            .clone()
            .ok_or_else(|| AccessError::new(Failure::Provider, "the read answered no ETag"))?;
        if let Some(etag) = etag
            && !same_etag(etag, &found)
        {
            return Err(AccessError::new(
                Failure::Changed,
                format!("{key} has ETag {found}, not {etag}"),
            ));
        }
        let mut properties = Properties::from_attributes(&result.attributes);
        properties.encryption = result
            .extensions
            .get::<Encryption>()
            .cloned()
            .unwrap_or_default();
        let size = result.meta.size;
        if size > max_bytes {
            return Err(too_large(key, size, max_bytes));
        }
        let mut bytes = BytesMut::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut stream = result.into_stream();
        while let Some(piece) = stream.next().await {
            let piece = piece.map_err(AccessError::storage)?;
            // The length was announced; a body longer than that is not read past the limit.
            if (bytes.len() + piece.len()) as u64 > max_bytes {
                return Err(too_large(
                    key,
                    (bytes.len() + piece.len()) as u64,
                    max_bytes,
                ));
            }
            bytes.extend_from_slice(&piece);
        }
        Ok(Whole {
            bytes: bytes.freeze(),
            etag: self.form.spell(&found),
            properties,
        })
    }

    /// The kind of the object at `key` where a provider has several and a put would replace
    /// it with one (Azure: `BlockBlob`, `AppendBlob`, `PageBlob`; Put Blob always writes a
    /// block blob). `None` for S3 and GCS, whose objects have one kind.
    pub async fn kind(&self, key: &str) -> Result<Option<String>, AccessError> {
        let key = object_path(key)?;
        self.writes.kind(key.as_ref()).await
    }

    /// The object's current metadata, or `None` when there is no object at `key`.
    pub async fn head(&self, key: &str) -> Result<Option<Object>, AccessError> {
        match self.store.head(&object_path(key)?).await {
            Ok(meta) => Ok(Some(self.object(meta))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(AccessError::storage(e)),
        }
    }

    /// Replaces an existing object's content only while its ETag is still `etag`; returns the
    /// new ETag. [`Failure::Changed`] when the object changed or is gone.
    pub async fn put_if_match(
        &self,
        key: &str,
        bytes: Bytes,
        etag: &str,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        self.put_as(key, bytes, Put::Update(etag), properties).await
    }

    /// Creates an object only if nothing exists at `key` (`If-None-Match: *`, or GCS's
    /// `ifGenerationMatch=0`); returns its ETag. [`Failure::Changed`] when something exists.
    pub async fn put_if_absent(
        &self,
        key: &str,
        bytes: Bytes,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        self.put_as(key, bytes, Put::Create, properties).await
    }

    /// Writes an object whatever is at `key`; returns its ETag.
    pub async fn put(
        &self,
        key: &str,
        bytes: Bytes,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        self.put_as(key, bytes, Put::Overwrite, properties).await
    }

    /// Deletes an object only while its ETag is still `etag`. [`Failure::Changed`] when it
    /// changed, and when it is already gone.
    pub async fn delete_if_match(&self, key: &str, etag: &str) -> Result<(), AccessError> {
        let key = object_path(key)?;
        self.writes.delete(key.as_ref(), Some(etag)).await
    }

    /// Deletes an object whatever it holds; an object already gone is deleted (`Ok`).
    pub async fn delete(&self, key: &str) -> Result<(), AccessError> {
        let key = object_path(key)?;
        self.writes.delete(key.as_ref(), None).await
    }

    /// Every put: the key as object_store would address it, the ETag as the listing spells it.
    /// Properties that could not be header values are left out (see [`Properties`]).
    async fn put_as(
        &self,
        key: &str,
        bytes: Bytes,
        mode: Put<'_>,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        let key = object_path(key)?;
        let etag = self
            .writes
            .put(key.as_ref(), bytes, mode, properties)
            .await?;
        Ok(self.form.spell(&etag))
    }
}

impl Storage {
    /// Copies `from_bucket/from_key` on the service's side, only while its ETag is still
    /// `etag`, to `to_bucket/to_key` (a bucket of the same connector, perhaps the same one),
    /// over whatever is there; returns the copy's ETag. The copy carries the source's
    /// metadata. [`Failure::Changed`] when the source changed or is gone.
    pub async fn copy_if_match(
        &self,
        from_bucket: &str,
        from_key: &str,
        etag: &str,
        to_bucket: &str,
        to_key: &str,
        encryption: Option<&Encryption>,
    ) -> Result<String, AccessError> {
        let (from_key, to_key) = (object_path(from_key)?, object_path(to_key)?);
        let source = self.bucket(from_bucket)?;
        let copied = source
            .writes
            .copy(
                from_key.as_ref(),
                etag,
                to_bucket,
                to_key.as_ref(),
                encryption,
            )
            .await?;
        Ok(source.form.spell(&copied))
    }
}

fn too_large(key: &str, size: u64, max_bytes: u64) -> AccessError {
    AccessError::new(
        Failure::TooLarge,
        format!("{key} is {size} bytes, more than the {max_bytes} that may be read whole"),
    )
}
