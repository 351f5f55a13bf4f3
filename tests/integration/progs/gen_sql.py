#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_sql.py: write the SQL script that t_progs.sh feeds to sqlite3.

usage: gen_sql.py ROWS > script.sql

ROWS single-row INSERT statements (customers and orders, in a few transactions) so that
sqlite's parser and page cache allocate a lot, then indexes, joins, GROUP BY, ORDER BY,
window functions, a recursive CTE, text functions, UPDATE/DELETE and an integrity check.
Every query orders its rows completely, so the output is deterministic. The data come from
a fixed linear congruential generator, not the random module, so they do not change with
the Python version.
"""
import sys

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
state = 12345


def rnd(n):
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return (state >> 33) % n


CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Nice", "Bonn", "Cork", "Riga", "Turku", "Graz"]
ITEMS = ["bolt", "nut", "gear", "cog", "belt", "pump", "valve", "hose", "seal", "spring"]

out = sys.stdout
w = out.write
w("PRAGMA cache_size = -16000;\n")
w("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, city TEXT, score REAL);\n")
w("CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER, item TEXT, qty INTEGER,"
  " price REAL, note TEXT);\n")
ncust = rows // 10
w("BEGIN;\n")
for i in range(1, ncust + 1):
    name = "cust%06d_%s" % (i, "xyz"[rnd(3)] * (1 + rnd(8)))
    w("INSERT INTO customers VALUES(%d,'%s','%s',%d.%02d);\n"
      % (i, name, CITIES[rnd(len(CITIES))], rnd(1000), rnd(100)))
w("COMMIT;\n")
norders = rows - ncust
for i in range(1, norders + 1):
    if i % 50000 == 1:
        w("BEGIN;\n")
    note = "n" + "ab"[rnd(2)] * rnd(40) if rnd(4) else ""
    w("INSERT INTO orders VALUES(%d,%d,'%s',%d,%d.%02d,%s);\n"
      % (i, 1 + rnd(ncust), ITEMS[rnd(len(ITEMS))], 1 + rnd(20), rnd(500), rnd(100),
         "'%s'" % note if note else "NULL"))
    if i % 50000 == 0 or i == norders:
        w("COMMIT;\n")

w("""CREATE INDEX orders_cust ON orders(cust);
CREATE INDEX orders_item ON orders(item, qty);
CREATE INDEX customers_city ON customers(city, score);
.headers on
.mode list
SELECT count(*), sum(qty), printf('%.2f', sum(qty * price)) FROM orders;
SELECT city, count(*), printf('%.2f', avg(score)), max(name) FROM customers
  GROUP BY city ORDER BY city;
SELECT c.id, c.name, count(o.id) AS n, printf('%.2f', sum(o.qty * o.price)) AS spend
  FROM customers c JOIN orders o ON o.cust = c.id
  GROUP BY c.id ORDER BY sum(o.qty * o.price) DESC, c.id LIMIT 20;
SELECT item, qty, count(*) FROM orders WHERE qty BETWEEN 5 AND 7
  GROUP BY item, qty ORDER BY item, qty;
SELECT c.city, o.item, count(*), sum(o.qty) FROM orders o JOIN customers c ON c.id = o.cust
  GROUP BY c.city, o.item ORDER BY c.city, o.item;
SELECT id, cust, item, rank FROM (
  SELECT id, cust, item, row_number() OVER (PARTITION BY item ORDER BY price DESC, id) AS rank
  FROM orders) WHERE rank <= 3 ORDER BY item, rank;
SELECT upper(substr(name, 1, 10)), length(name), replace(name, 'x', '<x>'),
       instr(name, 'y'), printf('%08.3f|%-6s|', score, city)
  FROM customers WHERE id % 997 = 0 ORDER BY id;
SELECT city, length(group_concat(name, ';')), count(DISTINCT substr(name, 12, 1))
  FROM (SELECT * FROM customers ORDER BY id) GROUP BY city ORDER BY city;
SELECT count(*), sum(length(note)), max(note) FROM orders WHERE note LIKE 'na%';
WITH RECURSIVE collatz(start, n, steps) AS (
  SELECT value, value, 0 FROM generate_series(1, 3000)
  UNION ALL
  SELECT start, CASE WHEN n % 2 THEN 3 * n + 1 ELSE n / 2 END, steps + 1
  FROM collatz WHERE n > 1)
SELECT start, max(steps) FROM collatz GROUP BY start ORDER BY max(steps) DESC, start LIMIT 10;
WITH RECURSIVE chain(i, s) AS (SELECT 1, 'a' UNION ALL
  SELECT i + 1, s || char(97 + i % 26) FROM chain WHERE i < 2000)
SELECT i, length(s), substr(s, -10) FROM chain WHERE i % 250 = 0 ORDER BY i;
UPDATE orders SET note = coalesce(note, '') || '+' || item WHERE qty > 15;
DELETE FROM orders WHERE item = 'cog' AND qty < 5;
SELECT count(*), sum(length(note)) FROM orders;
SELECT item, count(*) FROM orders GROUP BY item ORDER BY count(*) DESC, item;
CREATE TEMP TABLE spend AS SELECT cust, sum(qty * price) AS s FROM orders GROUP BY cust;
SELECT count(*), printf('%.2f', max(s)), printf('%.2f', min(s)) FROM spend;
SELECT * FROM customers WHERE id IN (SELECT cust FROM spend ORDER BY s DESC, cust LIMIT 5)
  ORDER BY id;
PRAGMA integrity_check;
""")
