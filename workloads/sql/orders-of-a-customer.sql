-- On TPC-H data (run it with the kv-vs-relational study): one customer's orders and their
-- line count, over integer columns only (SQLite keeps decimals as integer hundredths).
\set cust random(1, 1000)
SELECT o.o_orderkey, count(*)
  FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey
 WHERE o.o_custkey = :cust
 GROUP BY o.o_orderkey;
