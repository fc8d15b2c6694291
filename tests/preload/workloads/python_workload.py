"""Workload for the python3 preload test: json, re, sqlite3 and a few of CPython's
own unittest modules. Everything printed is deterministic (the test compares the
output with and without vcmalloc); unittest's timing line is normalised by the driver."""
import hashlib
import json
import random
import re
import sqlite3
import sys
import unittest


def json_part(rng):
    doc = {
        "users": [
            {
                "id": i,
                "name": "user%05d" % i,
                "tags": [rng.choice("abcdefgh") * rng.randint(1, 6) for _ in range(rng.randint(0, 8))],
                "score": round(rng.random() * 1000, 3),
                "nested": {"level": {"deeper": list(range(i % 17))}},
            }
            for i in range(20000)
        ]
    }
    text = json.dumps(doc, sort_keys=True)
    back = json.loads(text)
    assert back == doc
    pretty = json.dumps(back, indent=2, sort_keys=True)
    print("json: %d bytes compact, %d pretty, sha256 %s" % (
        len(text), len(pretty), hashlib.sha256(text.encode()).hexdigest()[:16]))


def re_part(rng):
    words = ["alpha", "beta", "gamma", "delta", "x1", "y22", "z333", "foo@bar.org", "2026-12-03"]
    text = " ".join(rng.choice(words) for _ in range(200000))
    emails = re.findall(r"[\w.]+@[\w.]+\.\w+", text)
    dates = re.findall(r"\b(\d{4})-(\d{2})-(\d{2})\b", text)
    swapped = re.sub(r"(\w)(\d+)", lambda m: m.group(2) + m.group(1), text)
    counts = {}
    for w in re.split(r"\s+", text):
        counts[w] = counts.get(w, 0) + 1
    print("re: %d emails, %d dates, %d bytes after sub, counts %s" % (
        len(emails), len(dates), len(swapped), sorted(counts.items())))


def sqlite_part(rng):
    db = sqlite3.connect(":memory:")
    db.execute("create table t (id integer primary key, grp integer, name text, val real)")
    db.executemany("insert into t (grp, name, val) values (?, ?, ?)",
                   ((rng.randint(0, 99), "n%06d" % rng.randint(0, 999999), rng.random())
                    for _ in range(50000)))
    db.execute("create index t_grp on t (grp)")
    db.execute("create index t_name on t (name)")
    rows = db.execute("select grp, count(*), round(sum(val), 6) from t group by grp "
                      "order by grp limit 5").fetchall()
    n_like = db.execute("select count(*) from t where name like 'n00%'").fetchone()[0]
    joined = db.execute("select count(*) from t a join t b on a.grp = b.grp "
                        "where a.id < 300 and b.id < 300").fetchone()[0]
    print("sqlite3: %s, like %d, join %d" % (rows, n_like, joined))
    db.close()


def unittest_part():
    names = ["test.test_re", "test.test_textwrap", "test.test_heapq", "test.test_collections"]
    try:
        for name in names:
            __import__(name)
    except ImportError as e:
        sys.stderr.write("python3 workload: %s: CPython's test modules are missing "
                         "(Debian package libpython3.11-testsuite)\n" % e)
        return False
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
    print("unittest: ran %d, failures %d, errors %d, skipped %d" % (
        result.testsRun, len(result.failures), len(result.errors), len(result.skipped)))
    return result.wasSuccessful()


def main():
    rng = random.Random(20261203)
    json_part(rng)
    re_part(rng)
    sqlite_part(rng)
    return 0 if unittest_part() else 1


if __name__ == "__main__":
    sys.exit(main())
