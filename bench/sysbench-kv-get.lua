-- sysbench script for bench/mysql: the statement dbsweep's get sends to MariaDB, on table
-- bench_kv of dbsweep's kv shape (bench/mysql creates and fills it). One prepared
-- primary-key SELECT of the whole row per event, keys uniform over 0 .. rows - 1, as
-- dbsweep draws them. Reads every row sysbench's driver returns, as oltp_point_select does.

sysbench.cmdline.options = {
    rows = {"Rows in bench_kv (keys 0 .. rows - 1)", 100000},
}

function thread_init()
    drv = sysbench.sql.driver()
    con = drv:connect()
    stmt = con:prepare("SELECT k, grp, val, payload FROM bench_kv WHERE k = ?")
    key = stmt:bind_create(sysbench.sql.type.BIGINT)
    stmt:bind_param(key)
end

function event()
    key:set(sysbench.rand.uniform(0, sysbench.opt.rows - 1))
    stmt:execute()
end

function thread_done()
    stmt:close()
    con:disconnect()
end
