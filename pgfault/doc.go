// Package pgfault holds kbkit's Postgres fault harnesses, behind `kbkit pg
// failover-test`, `kbkit pg partition-test` and `kbkit pg soak`: each runs
// kbkit's reference server against a real Postgres it breaks (a lost
// primary, a split brain, a partition between server and database, hours
// of flapping links), audits every acknowledged command afterwards and
// fails on a loss. Who uses it: the reference server's maintainers and
// anyone who deploys it. Package netfault is the TCP fault proxy they put
// between the servers and Postgres.
//
// Failover measures what a Postgres failover costs the server and its
// clients: a bounded load of writers (kbcore
// Windows with their own subscriptions, on one shared page and on pages
// of their own) runs against embedded server instances on a primary with
// one streaming standby; mid-load the replication link stalls, the
// primary's machine is lost (its processes killed, its data directory
// deleted), the standby is promoted and a new standby seeded. The load
// goes on through the outage, then every acknowledged command is looked
// up in the new primary's log.
//
//	res, err := pgfault.Run(ctx, pgfault.Config{Topology: pgprovider.TopologySyncStandby})
//	pgfault.Text(os.Stdout, res)
//	if !res.OK() { ... }
//
// With a synchronous standby nothing acknowledged may be lost; with an
// asynchronous one (for contrast) what the primary acknowledged during
// the stall is gone, and the seqs it had are given to other commands.
package pgfault
