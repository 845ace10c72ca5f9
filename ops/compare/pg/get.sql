-- GET: one object by (bucket, key).
\set k random(0, :nkeys - 1)
SELECT * FROM objects WHERE bucket = 'bench' AND key = 'k' || lpad(:k::text, 5, '0');
