-- LIST: an index range scan of 100 keys after a random start.
\set k random(0, :nkeys - 1)
SELECT key, version_id, etag, size, storage_class, last_modified FROM objects
  WHERE bucket = 'bench' AND key > 'k' || lpad(:k::text, 5, '0') ORDER BY key LIMIT 100;
