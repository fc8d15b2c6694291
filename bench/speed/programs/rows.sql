-- rows.sql - sqlite3 :memory: workload of bench/run-speed: a table with two indexes
-- filled with @rows rows in one INSERT ... SELECT, then a GROUP BY over it.
-- Run as:  (echo ".parameter set @rows 300000"; cat rows.sql) | sqlite3 :memory:
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, amount REAL);
CREATE INDEX t_grp ON t(grp);
CREATE INDEX t_name ON t(name);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @rows)
INSERT INTO t
  SELECT i, (i * 7919) % 1000, printf('name-%08d', (i * 2654435761) % 1000003), i * 0.25
  FROM n;
SELECT grp, count(*), sum(amount), max(name) FROM t GROUP BY grp ORDER BY 3 DESC LIMIT 3;
