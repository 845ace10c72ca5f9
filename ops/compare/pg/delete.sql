-- DELETE: insert a delete-marker version and delete the object, one
-- statement.
\set k random(0, :nkeys - 1)
WITH v AS (
  INSERT INTO versions (bucket, key, etag, size, content_type, delete_marker)
  VALUES ('bench', 'k' || lpad(:k::text, 5, '0'), '', 0, '', true))
DELETE FROM objects WHERE bucket = 'bench' AND key = 'k' || lpad(:k::text, 5, '0');
