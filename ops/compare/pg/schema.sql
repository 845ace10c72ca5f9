-- ops/compare/pg/schema.sql: objlog's metadata as two PostgreSQL tables, for
-- the side-by-side benchmark (compare.sh). Keys compare as bytes (COLLATE
-- "C"), as objlog's do. :nkeys keys k00000.. in bucket 'bench' are loaded.
CREATE TABLE objects (
  bucket        text COLLATE "C" NOT NULL,
  key           text COLLATE "C" NOT NULL,
  version_id    bigint NOT NULL,
  etag          text NOT NULL,
  size          bigint NOT NULL,
  content_type  text NOT NULL,
  storage_class text NOT NULL DEFAULT 'STANDARD',
  last_modified timestamptz NOT NULL DEFAULT now(),
  user_metadata jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (bucket, key)
);
CREATE TABLE versions (
  bucket        text COLLATE "C" NOT NULL,
  key           text COLLATE "C" NOT NULL,
  version_id    bigint GENERATED ALWAYS AS IDENTITY,
  etag          text NOT NULL,
  size          bigint NOT NULL,
  content_type  text NOT NULL,
  delete_marker boolean NOT NULL DEFAULT false,
  created       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (bucket, key, version_id)
);
INSERT INTO versions (bucket, key, etag, size, content_type)
  SELECT 'bench', 'k' || lpad(i::text, 5, '0'), '0123456789abcdef0123456789abcdef', 1024,
         'application/octet-stream'
  FROM generate_series(0, :nkeys - 1) AS i;
INSERT INTO objects (bucket, key, version_id, etag, size, content_type, last_modified)
  SELECT bucket, key, version_id, etag, size, content_type, created FROM versions;
VACUUM ANALYZE;
