-- PUT: insert a version and upsert the object, one statement (one round
-- trip, one transaction: as one HTTP PUT).
\set k random(0, :nkeys - 1)
WITH v AS (
  INSERT INTO versions (bucket, key, etag, size, content_type)
  VALUES ('bench', 'k' || lpad(:k::text, 5, '0'), '0123456789abcdef0123456789abcdef', 1024,
          'application/octet-stream')
  RETURNING bucket, key, version_id, etag, size, content_type, created)
INSERT INTO objects (bucket, key, version_id, etag, size, content_type, last_modified)
  SELECT bucket, key, version_id, etag, size, content_type, created FROM v
ON CONFLICT (bucket, key) DO UPDATE SET version_id = EXCLUDED.version_id,
  etag = EXCLUDED.etag, size = EXCLUDED.size, content_type = EXCLUDED.content_type,
  last_modified = EXCLUDED.last_modified;
