-- A report over a random window of 1,000 accounts: counts and balances per branch.
\set lo random(1, 100000 * :scale - 999)
SELECT bid, count(*), sum(abalance), min(aid), max(aid)
  FROM pgbench_accounts
 WHERE aid BETWEEN :lo AND :lo + 999
 GROUP BY bid;
