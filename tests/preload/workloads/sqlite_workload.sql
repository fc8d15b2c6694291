-- Workload for the sqlite3 CLI preload test: 100k rows, indexes, queries.
PRAGMA journal_mode = WAL;
CREATE TABLE item (id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, price REAL, body TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO item (grp, name, price, body)
  SELECT (i * 7919) % 97, printf('item-%06d', (i * 104729) % 1000003), (i % 1000) / 10.0,
         substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26) || i
  FROM n;
CREATE INDEX item_grp ON item (grp);
CREATE INDEX item_name ON item (name);
CREATE INDEX item_grp_price ON item (grp, price);
CREATE TABLE grp (id INTEGER PRIMARY KEY, label TEXT);
WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 96)
INSERT INTO grp SELECT i, 'group ' || i FROM g;
SELECT count(*), sum(price), min(name), max(name) FROM item;
SELECT grp, count(*), round(avg(price), 4) FROM item GROUP BY grp ORDER BY grp LIMIT 10;
SELECT g.label, count(*) FROM item i JOIN grp g ON g.id = i.grp
  WHERE i.price > 90 GROUP BY g.label ORDER BY count(*) DESC, g.label LIMIT 5;
SELECT name FROM item WHERE name BETWEEN 'item-500000' AND 'item-500100' ORDER BY name;
SELECT count(DISTINCT body) FROM item;
UPDATE item SET price = price * 2 WHERE grp = 13;
DELETE FROM item WHERE id % 10 = 0;
SELECT count(*), round(sum(price), 2) FROM item;
PRAGMA integrity_check;
