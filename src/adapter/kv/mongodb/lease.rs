//! The MongoDB adapter's lease record: the one document `{_id: "lease", holder}` of the
//! collection `dbsweep_lease` in dbsweep's database, taken with `insert_one` (the unique
//! `_id` lets one of two runs win), renewed and removed with `update_one`/`delete_one`
//! filtered on the stored holder, each atomic on one document (the protocol is
//! `adapter::lease`). Removing the record drops the lease collection, and the marker when
//! nothing else of dbsweep's is left; MongoDB has no lock around that step, so a run taking
//! the lease in that instant can lose it again, which its next renewal notices. Must not
//! touch any collection but these two.

use super::{LEASE_COLLECTION, MARKER_COLLECTION, MongoDb, PREFIX, is_duplicate_key};
use crate::adapter::lease::LeaseStore;
use crate::error::Result;
use async_trait::async_trait;
use mongodb::Collection;
use mongodb::bson::{Document, doc};

/// The record's `_id`.
const LEASE_ID: &str = "lease";

impl MongoDb {
    async fn lease_collection(&self) -> Result<Collection<Document>> {
        Ok(self.db().await?.collection::<Document>(LEASE_COLLECTION))
    }

    /// Drops the lease collection, and the marker when no other `dbsweep_*` collection is
    /// left.
    async fn drop_lease_collection(&self) -> Result<()> {
        let db = self.db().await?;
        db.collection::<Document>(LEASE_COLLECTION).drop().await.map_err(|e| self.setup_error("drop", e))?;
        let names = db.list_collection_names().await.map_err(|e| self.setup_error("listCollections", e))?;
        let ours: Vec<&String> = names.iter().filter(|n| n.starts_with(PREFIX)).collect();
        if ours.iter().all(|n| *n == MARKER_COLLECTION) && !ours.is_empty() {
            db.collection::<Document>(MARKER_COLLECTION).drop().await.map_err(|e| self.setup_error("drop", e))?;
        }
        Ok(())
    }
}

#[async_trait]
impl LeaseStore for MongoDb {
    fn place(&self) -> String {
        format!("database {} on MongoDB at {}", self.database, self.address)
    }

    fn alternatives(&self) -> String {
        "name another database in the URL path, or add --namespace NAME to run side by side in another database".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        // Foreign `dbsweep_*` collections are refused before the record is trusted.
        self.check_owned(&self.db().await?).await?;
        let record =
            self.lease_collection().await?.find_one(doc! {"_id": LEASE_ID}).await.map_err(|e| self.setup_error("reading the lease", e))?;
        // A document without a text holder is shown as what it is, which the protocol refuses.
        Ok(record.map(|r| r.get_str("holder").map_or_else(|_| r.to_string(), str::to_string)))
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let collection = self.lease_collection().await?;
        match (current, next) {
            (None, None) => Ok(self.read().await?.is_none()),
            (None, Some(next)) => {
                let db = self.db().await?;
                self.check_owned(&db).await?;
                self.write_marker(&db).await?;
                match collection.insert_one(doc! {"_id": LEASE_ID, "holder": next}).await {
                    Ok(_) => Ok(true),
                    Err(e) if is_duplicate_key(&e) => Ok(false),
                    Err(e) => Err(self.setup_error("writing the lease", e)),
                }
            }
            (Some(current), Some(next)) => {
                let result = collection
                    .update_one(doc! {"_id": LEASE_ID, "holder": current}, doc! {"$set": {"holder": next}})
                    .await
                    .map_err(|e| self.setup_error("renewing the lease", e))?;
                Ok(result.matched_count == 1)
            }
            (Some(current), None) => {
                let result = collection
                    .delete_one(doc! {"_id": LEASE_ID, "holder": current})
                    .await
                    .map_err(|e| self.setup_error("removing the lease", e))?;
                if result.deleted_count != 1 {
                    return Ok(false);
                }
                self.drop_lease_collection().await?;
                Ok(true)
            }
        }
    }
}
