-- A point query with a skewed key: a few accounts are asked for far more often than the
-- rest (zipfian, s = 1.1), as a cache-friendly lookup workload would.
\set aid random_zipfian(1, 100000 * :scale, 1.1)
SELECT aid, bid, abalance FROM pgbench_accounts WHERE aid = :aid;
